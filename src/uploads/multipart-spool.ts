// Streams a multipart/form-data request with busboy: text fields are collected, the one file part is
// spooled to a temp file while its SHA-256 and size are computed. Nothing is held whole in memory, and
// an oversize upload is refused as soon as it crosses the cap (the rest is never read).
import busboy from 'busboy'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { mkdir, readdir, readFile, rm } from 'node:fs/promises'
import type { IncomingHttpHeaders } from 'node:http'
import { basename, isAbsolute, join } from 'node:path'
import { Transform, type Readable, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { badRequest, insufficientStorage, UploadError } from './errors.js'
import { STAGING_MARKER_PREFIX, STAGING_PREFIX } from './extract-zip.js'
import { recoverMerges, type RecoveryReport } from './merge-journal.js'

export interface SpoolOptions {
  /** Name of the one file part. */
  fileField: string
  /** Names of the accepted text parts (others are ignored). */
  textFields: readonly string[]
  /** Largest accepted file part; above it the upload fails with 413 payload_too_large. */
  maxFileBytes: number
  /** Directory of the spool file (same filesystem as its final home when it will be renamed). */
  dir: string
  /** Prefix of the spool file name (sweepSpool removes leftovers by it). */
  prefix?: string
  /** Called when a text field arrives, so bad input can fail before the file is read. Throw to abort. */
  onField?: (name: string, value: string) => void
}

export interface SpooledFile {
  path: string
  size: number
  sha256: string
  filename?: string
}
export interface SpooledUpload {
  fields: Map<string, string>
  file?: SpooledFile
}

export const DEFAULT_SPOOL_PREFIX = '.spool-'

/**
 * One upload from slot to cleanup, shared by upload_zip and the extension upload: takes an upload
 * slot (429 when none), spools the request, runs `use`, and always removes the spool file (unless
 * `use` called keep(): it moved the file) and frees the slot, whatever failed.
 */
export async function withSpooledUpload<T>(
  req: Readable & { headers: IncomingHttpHeaders },
  opts: SpoolOptions,
  slots: { take(): () => void } | undefined,
  use: (upload: SpooledUpload, keep: () => void) => Promise<T>,
): Promise<T> {
  const release = slots?.take()
  let spooledPath: string | undefined
  try {
    const upload = await spoolMultipart(req, opts)
    spooledPath = upload.file?.path
    return await use(upload, () => {
      spooledPath = undefined
    })
  } finally {
    if (spooledPath) await rm(spooledPath, { force: true })
    release?.()
  }
}
/** Room for boundaries, headers and the small text fields on top of the file cap. */
const ENVELOPE_SLACK_BYTES = 1024 * 1024
const MAX_FIELD_BYTES = 64 * 1024

export const tooLarge = (max: number) =>
  new UploadError('payload_too_large', `upload exceeds the limit of ${max} bytes`, [
    { code: 'payload_too_large', message: `the limit is ${max} bytes` },
  ])

/**
 * Settles what a crash left, before the API opens: first every journaled merge is rolled back (or,
 * once committed, forward) so the destination is exactly its old or its new tree; then spool files
 * and the extraction staging directories named by the markers extractZip writes here are removed
 * (except the staging of a merge that could not be rolled back). Returns the count of removed
 * leftovers; onRecovery gets the merge recovery report (for a log line).
 */
export async function sweepSpool(
  dir: string,
  prefix = DEFAULT_SPOOL_PREFIX,
  onRecovery?: (report: RecoveryReport) => void,
): Promise<number> {
  await mkdir(dir, { recursive: true })
  const recovery = await recoverMerges(dir)
  onRecovery?.(recovery)
  const keep = new Set(recovery.failed.map(f => f.staging))
  let n = 0
  for (const name of await readdir(dir)) {
    if (name.startsWith(STAGING_MARKER_PREFIX)) {
      const staging = (await readFile(join(dir, name), 'utf8').catch(() => '')).trim()
      if (keep.has(staging)) continue
      // only ever a staging directory: the marker's content is not trusted beyond that shape
      if (isAbsolute(staging) && basename(staging).startsWith(STAGING_PREFIX))
        await rm(staging, { recursive: true, force: true })
    } else if (!name.startsWith(prefix)) {
      continue
    }
    await rm(join(dir, name), { force: true, recursive: true })
    n++
  }
  return n
}

export async function spoolMultipart(
  req: Readable & { headers: IncomingHttpHeaders },
  opts: SpoolOptions,
): Promise<SpooledUpload> {
  const type = req.headers['content-type'] ?? ''
  if (!/^multipart\/form-data\s*;/i.test(type)) throw badRequest('body', 'expected multipart/form-data')
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > opts.maxFileBytes + ENVELOPE_SLACK_BYTES)
    throw tooLarge(opts.maxFileBytes)

  let parser: busboy.Busboy
  try {
    parser = busboy({
      headers: req.headers,
      limits: { fieldSize: MAX_FIELD_BYTES, fields: 32, files: 4, parts: 40, headerPairs: 100 },
    })
  } catch (err) {
    throw badRequest('body', (err as Error).message)
  }
  await mkdir(opts.dir, { recursive: true })
  const fields = new Map<string, string>()
  const spoolPath = join(opts.dir, `${opts.prefix ?? DEFAULT_SPOOL_PREFIX}${randomBytes(8).toString('hex')}`)
  let file: SpooledFile | undefined
  let fileDone: Promise<void> | undefined
  let spoolStream: WriteStream | undefined
  /** Destroys the file pipeline so fileDone settles even when busboy stops mid-part. */
  let abortFile: ((err: Error) => void) | undefined

  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false
      const fail = (err: unknown) => {
        if (failed) return
        failed = true
        // stop parsing; the API drains the rest of the body after answering (src/api/body-drain.ts)
        req.unpipe(parser)
        req.pause()
        parser.removeAllListeners('file').removeAllListeners('field')
        parser.on('error', () => undefined)
        parser.destroy()
        abortFile?.(err as Error)
        reject(err)
      }
      parser.on('field', (name, value, info) => {
        if (failed) return
        if (name === opts.fileField)
          return fail(badRequest(name, 'must be a file part (with a filename), not a text field'))
        if (!opts.textFields.includes(name)) return
        if (info.valueTruncated) return fail(badRequest(name, `longer than ${MAX_FIELD_BYTES} bytes`))
        if (fields.has(name)) return fail(badRequest(name, 'given more than once'))
        fields.set(name, value)
        try {
          opts.onField?.(name, value)
        } catch (err) {
          fail(err)
        }
      })
      parser.on('file', (name, stream, info) => {
        // A part not kept is read to its end; destroying the parser then ends it with an error
        // nobody else listens for (an uncaught one would take the daemon down).
        stream.on('error', () => undefined)
        if (failed) {
          stream.resume()
          return
        }
        if (name !== opts.fileField) {
          stream.resume()
          return fail(
            badRequest(
              name,
              opts.textFields.includes(name)
                ? 'must be a text field, not a file part'
                : `unexpected file part (expected "${opts.fileField}")`,
            ),
          )
        }
        if (fileDone) {
          stream.resume()
          return fail(badRequest(name, 'given more than once'))
        }
        const hash = createHash('sha256')
        let size = 0
        const meter = new Transform({
          transform(chunk: Buffer, _enc, cb: TransformCallback) {
            size += chunk.length
            if (size > opts.maxFileBytes) return cb(tooLarge(opts.maxFileBytes))
            hash.update(chunk)
            cb(null, chunk)
          },
        })
        abortFile = err => {
          meter.destroy(err)
          stream.destroy()
        }
        spoolStream = createWriteStream(spoolPath, { flags: 'wx', mode: 0o600 })
        fileDone = pipeline(stream, meter, spoolStream).then(() => {
          file = { path: spoolPath, size, sha256: hash.digest('hex'), filename: info.filename }
        })
        fileDone.catch(fail)
      })
      parser.on('error', (err: Error) => fail(badRequest('body', `malformed multipart body: ${err.message}`)))
      parser.on('close', () => {
        if (!failed)
          (fileDone ?? Promise.resolve()).then(() => {
            if (!failed) resolve()
          }, fail)
      })
      req.on('error', err => fail(badRequest('body', `upload interrupted: ${err.message}`)))
      req.on('aborted', () => fail(badRequest('body', 'upload aborted by the client')))
      req.pipe(parser)
    })
  } catch (err) {
    await fileDone?.catch(() => undefined)
    // The write stream opens its file asynchronously: a pipeline destroyed before that open would
    // otherwise create the file after the rm below, leaving an orphan behind the error response.
    if (spoolStream && !spoolStream.closed) await once(spoolStream, 'close').catch(() => undefined)
    await rm(spoolPath, { force: true })
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOSPC' || code === 'EDQUOT')
      throw insufficientStorage('the disk is full: the upload could not be stored')
    throw err
  }
  return { fields, file }
}
