/** Each part of src/ (a folder, or a loose file with .ts) and the parts it may import. */
export declare const MAY_IMPORT: Record<string, string[]>
