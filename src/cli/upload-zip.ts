// `browser-telemetry upload-zip <zip> <dest>`: POST /browsers/{id}/fs/upload_zip.
import { defineCommand } from './command.js'
import { upload } from './upload.js'

export const uploadZipCommand = defineCommand(
  {
    name: 'upload-zip',
    summary:
      'Upload a zip archive into the browser VM and extract it under <dest> (an absolute path inside an upload root).',
    positionals: '<zip> <dest>',
    minPositionals: 2,
    maxPositionals: 2,
    options: {},
    notes: ['Example:', '  browser-telemetry upload-zip fixtures.zip /var/lib/browser-telemetry/uploads/fixtures'],
  },
  async ({ positionals }, client, io) => {
    const [zip, dest] = positionals as [string, string]
    const path = await client.browserPath('/fs/upload_zip')
    await upload(
      client,
      path,
      [
        { name: 'zip_file', file: zip, contentType: 'application/zip' },
        { name: 'dest_path', value: dest },
      ],
      { stderr: io.stderr, signal: io.signal },
    )
    io.stdout.write(`extracted ${zip} to ${dest}\n`)
    return 0
  },
)
