// HAR 1.2 export of captured network events (pure converter; the CLI's `har` command writes the file).
export {
  toHar,
  HarBuilder,
  type HarStreamBounds,
  headerList,
  isoOfUs,
  isHarRelevant,
  utf8ByteLength,
  HAR_CATEGORIES,
  type ToHarOptions,
} from './to-har.js'
export { ExchangeJoin, joinExchanges, exchangeKey, firstOf, type Exchange, type EnvelopeOf } from './exchanges.js'
export type * from './types.js'
