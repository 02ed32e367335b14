// The extension group: upload (multipart `file` + optional `name`), list (offset-paged), metadata,
// download (exact stored bytes) and delete. Storage and validation live in src/uploads/extension-store.ts.
import { Type } from '@sinclair/typebox'
import { notFound } from '../errors.js'
import { ErrorBodySchema } from '../schemas.js'
import type { ApiContext, ApiRouter } from '../route-table.js'
import { badRequest } from '../../uploads/errors.js'
import {
  DEFAULT_PROJECT,
  duplicateName,
  EXTENSION_NAME_RE,
  validateExtensionArchive,
  view,
  type ExtensionStore,
} from '../../uploads/extension-store.js'
import { withSpooledUpload } from '../../uploads/multipart-spool.js'
import type { ZipLimits } from '../../uploads/zip-entries.js'
import type { UploadSlots } from '../../uploads/upload-slots.js'

export interface ExtensionRouteDeps {
  /** ExtensionStore.open({dir: `<dataDir>/extensions`, db: ExtensionMetaStore at `<dataDir>/extensions-meta`}) */
  store: ExtensionStore
  /** Largest accepted archive (413 above). */
  uploadMaxBytes: number
  zipLimits: ZipLimits
  /** Cap on uploads in progress, shared with upload_zip (429 above); none when absent. */
  slots?: UploadSlots
}

const ExtensionSchema = Type.Object({
  id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  size_bytes: Type.Integer(),
  name: Type.Optional(Type.String()),
  checksum: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  last_used_at: Type.Optional(Type.String({ format: 'date-time' })),
})
const ProjectHeader = {
  'X-Kernel-Project-Id': {
    schema: Type.String(),
    description: 'Project scope of names and lookups (absent: the default project)',
  },
}
const IdOrName = 'Extension id, or its name (case-insensitive) within the project'

const ErrorDoc = (description: string) => ({ description, schema: ErrorBodySchema })

const projectOf = (ctx: ApiContext) => ctx.get('x-kernel-project-id').trim() || DEFAULT_PROJECT

function checkName(name: string): void {
  if (!EXTENSION_NAME_RE.test(name))
    throw badRequest('name', 'must be 1 to 255 characters of letters, digits, ".", "_" and "-"')
}

export function registerExtensionRoutes(router: ApiRouter, deps: ExtensionRouteDeps): void {
  const { store } = deps

  router.add({
    method: 'POST',
    path: '/extensions',
    operationId: 'uploadExtension',
    summary: 'Upload a zip of an unpacked browser extension',
    description:
      'multipart/form-data: a file part `file` (zip whose root or single top folder holds manifest.json with manifest_version, name and version) and an optional `name`, unique within the project (409 conflict otherwise).',
    scope: 'write',
    headers: ProjectHeader,
    requestBody: {
      contentType: 'multipart/form-data',
      required: true,
      schema: Type.Object({ file: Type.String({ format: 'binary' }), name: Type.Optional(Type.String()) }),
    },
    responses: {
      201: { description: 'The stored extension', schema: ExtensionSchema },
      409: ErrorDoc('the name is taken in the project (conflict, with X-Should-Retry: false)'),
      413: ErrorDoc('file is larger than the upload limit (payload_too_large)'),
      429: ErrorDoc('too many uploads in progress (too_many_requests, with Retry-After)'),
      507: ErrorDoc('the data disk cannot hold the archive (insufficient_storage)'),
    },
    handler: async ctx => {
      const project = projectOf(ctx)
      await withSpooledUpload(
        ctx.req,
        {
          fileField: 'file',
          textFields: ['name'],
          maxFileBytes: deps.uploadMaxBytes,
          dir: store.dir,
          prefix: store.spoolPrefix,
          onField: (field, value) => {
            // fail fast, before the archive streams in; create() checks again atomically
            if (field !== 'name') return
            checkName(value)
            if (store.nameTaken(project, value)) throw duplicateName(value)
          },
        },
        deps.slots,
        async (upload, keep) => {
          if (!upload.file) throw badRequest('file', 'missing (a file part with the zip archive is required)')
          await validateExtensionArchive(upload.file.path, deps.zipLimits)
          const record = await store.create(project, upload.fields.get('name'), upload.file)
          keep() // renamed into the store
          ctx.status = 201
          ctx.body = view(record)
        },
      )
    },
  })

  router.add({
    method: 'GET',
    path: '/extensions',
    operationId: 'listExtensions',
    summary: 'List extensions of the project, oldest first',
    description: 'Offset paging: send X-Next-Offset as offset while X-Has-More is true.',
    scope: 'read',
    headers: ProjectHeader,
    query: {
      limit: { schema: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) },
      offset: { schema: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 }) },
      name: { schema: Type.String(), description: 'Exact name, case-insensitive' },
      query: { schema: Type.String(), description: 'Case-insensitive substring of the name, or an exact id' },
    },
    responses: {
      200: {
        description: 'A page of extensions',
        schema: Type.Array(ExtensionSchema),
        headers: {
          'X-Has-More': { schema: Type.Union([Type.Literal('true'), Type.Literal('false')]) },
          'X-Next-Offset': { schema: Type.Integer({ minimum: 0 }), description: '0 when there are no more results' },
        },
      },
    },
    handler: async ctx => {
      const q = ctx.state.query!
      const page = store.list(projectOf(ctx), {
        limit: q.limit as number,
        offset: q.offset as number,
        name: q.name as string | undefined,
        query: q.query as string | undefined,
      })
      ctx.set('X-Has-More', page.hasMore ? 'true' : 'false')
      ctx.set('X-Next-Offset', String(page.nextOffset))
      ctx.body = page.items
    },
  })

  router.add({
    method: 'GET',
    path: '/extensions/:id_or_name/metadata',
    operationId: 'getExtension',
    summary: "An extension's metadata",
    description: IdOrName,
    scope: 'read',
    headers: ProjectHeader,
    responses: { 200: { description: 'The extension', schema: ExtensionSchema } },
    handler: async ctx => {
      const rec = store.find(projectOf(ctx), ctx.params.id_or_name!)
      if (!rec) throw notFound(`extension ${JSON.stringify(ctx.params.id_or_name)} not found`)
      ctx.body = view(rec)
    },
  })

  router.add({
    method: 'GET',
    path: '/extensions/:id_or_name',
    operationId: 'downloadExtension',
    summary: 'Download the extension archive (the exact uploaded bytes)',
    description: `${IdOrName}. Sets last_used_at.`,
    scope: 'read',
    headers: ProjectHeader,
    responses: {
      200: {
        description: 'The zip archive',
        contentType: 'application/zip',
        schema: Type.String({ format: 'binary' }),
      },
    },
    handler: async ctx => {
      const found = await store.download(projectOf(ctx), ctx.params.id_or_name!)
      if (!found) throw notFound(`extension ${JSON.stringify(ctx.params.id_or_name)} not found`)
      ctx.status = 200
      ctx.type = 'application/zip'
      ctx.set('Content-Disposition', `attachment; filename="${found.record.name ?? found.record.id}.zip"`)
      ctx.body = found.stream
      ctx.length = found.record.size_bytes
    },
  })

  router.add({
    method: 'DELETE',
    path: '/extensions/:id_or_name',
    operationId: 'deleteExtension',
    summary: 'Delete an extension',
    description: IdOrName,
    scope: 'write',
    headers: ProjectHeader,
    responses: { 204: { description: 'Deleted' } },
    handler: async ctx => {
      if (!(await store.delete(projectOf(ctx), ctx.params.id_or_name!)))
        throw notFound(`extension ${JSON.stringify(ctx.params.id_or_name)} not found`)
      ctx.status = 204
    },
  })
}
