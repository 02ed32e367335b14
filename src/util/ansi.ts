// Terminal colour and cursor codes out of text meant for people: Playwright's error messages carry
// them (`\u001b[2m` around its call log), and a viewer, a bundle or an OTLP backend would show them
// as litter.

// CSI (ESC [ ... final, or the one-byte C1 form), OSC (ESC ] ... BEL or ESC \), and the other
// two-byte escapes (ESC and one of @-Z \ ] ^ _).
// eslint-disable-next-line no-control-regex
const ANSI = /(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-Z\\-_]/g

/** `text` without ANSI escape sequences (the same string when it holds none). */
export function stripAnsi(text: string): string {
  return text.indexOf('\u001b') < 0 && text.indexOf('\u009b') < 0 ? text : text.replace(ANSI, '')
}
