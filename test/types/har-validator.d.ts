// har-validator ships no types; the tests use only its promise API.
declare module 'har-validator' {
  const validate: {
    har(data: unknown): Promise<unknown>
    log(data: unknown): Promise<unknown>
    [schema: string]: (data: unknown) => Promise<unknown>
  }
  export default validate
}
