// Reading what was dropped on the page: files, and whole folders with their
// structure kept (the entries API: webkitGetAsEntry / readEntries).

function readAll(reader) {
  // readEntries answers in batches (100 in Chromium) until it answers an empty one
  return new Promise((resolve, reject) => {
    const all = [];
    const next = () =>
      reader.readEntries((batch) => {
        if (!batch.length) resolve(all);
        else {
          all.push(...batch);
          next();
        }
      }, reject);
    next();
  });
}

const fileOf = (entry) =>
  new Promise((resolve, reject) => entry.file(resolve, reject));

/** Walk an entry: files as {file, path}, and the paths of folders that turned out empty. */
export async function walkEntry(entry, prefix = "") {
  const path = prefix ? `${prefix}/${entry.name}` : entry.name;
  if (entry.isFile)
    return { files: [{ file: await fileOf(entry), path }], folders: [] };
  if (!entry.isDirectory) return { files: [], folders: [] };
  const children = await readAll(entry.createReader());
  const result = { files: [], folders: children.length ? [] : [path] };
  for (const child of children) {
    const inner = await walkEntry(child, path);
    result.files.push(...inner.files);
    result.folders.push(...inner.folders);
  }
  return result;
}

/**
 * The files of a drop as [{file, path}] (path relative to the drop target) and the
 * empty folders to create. Must be called in the drop handler itself: the items
 * are gone once the event is over, so their entries are taken first.
 */
export function collectDrop(dataTransfer) {
  const items = [...(dataTransfer.items || [])].filter(
    (item) => item.kind === "file",
  );
  const entries = items.map((item) =>
    item.webkitGetAsEntry ? item.webkitGetAsEntry() : null,
  );
  if (!entries.length || entries.some((entry) => !entry)) {
    const files = [...(dataTransfer.files || [])].map((file) => ({
      file,
      path: file.name,
    }));
    return Promise.resolve({ files, folders: [] });
  }
  return Promise.all(entries.map((entry) => walkEntry(entry))).then(
    (parts) => ({
      files: parts.flatMap((p) => p.files),
      folders: parts.flatMap((p) => p.folders),
    }),
  );
}

/** The files of an <input type=file> (a folder picker gives webkitRelativePath). */
export function collectInput(fileList) {
  return [...fileList].map((file) => ({
    file,
    path: file.webkitRelativePath || file.name,
  }));
}
