import { useCallback, useRef, useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { uploadFile } from "../api/uploadFile.js";

const PARALLEL = 3; // files uploading at once

/**
 * The upload queue: per-file progress, cancel, and a callback when a batch ends.
 * `items` are [{file, path}] with paths relative to the folder they go into.
 */
export function useUploads({ onBatchDone, notify, upload = uploadFile }) {
  const [uploads, setUploads] = useState([]);
  const controllers = useRef(new Map());
  const counter = useRef(0);
  const patch = useCallback((id, changes) => {
    setUploads((all) =>
      all.map((u) => (u.id === id ? { ...u, ...changes } : u)),
    );
  }, []);

  const start = useCallback(
    async (items, folder) => {
      if (!items.length) return;
      const batch = items.map(({ file, path }) => {
        counter.current += 1;
        return {
          id: counter.current,
          file,
          path,
          name: path,
          size: file.size,
          progress: 0,
          status: "queued",
        };
      });
      setUploads((all) => [
        ...all,
        ...batch.map((item) => ({ ...item, file: undefined })),
      ]);
      const queue = [...batch];
      let done = 0;
      let failed = 0;
      const worker = async () => {
        while (queue.length) {
          const item = queue.shift();
          const controller = new AbortController();
          controllers.current.set(item.id, controller);
          patch(item.id, { status: "uploading" });
          try {
            await upload(item.file, folder, item.path, {
              signal: controller.signal,
              onProgress: (progress) => patch(item.id, { progress }),
            });
            done += 1;
            patch(item.id, { status: "done", progress: 1 });
          } catch (error) {
            failed += 1;
            const cancelled = controller.signal.aborted;
            patch(item.id, {
              status: cancelled ? "cancelled" : "failed",
              error: errorText(error),
            });
            if (!cancelled)
              notify(`${item.path}: ${errorText(error)}`, { type: "negative" });
          } finally {
            controllers.current.delete(item.id);
          }
        }
      };
      await Promise.all(
        Array.from({ length: Math.min(PARALLEL, batch.length) }, worker),
      );
      if (done)
        notify(
          done === 1
            ? `Uploaded ${batch.length === 1 ? batch[0].path : "1 file"}`
            : `Uploaded ${done} files`,
          { type: "positive" },
        );
      const ids = new Set(batch.map((b) => b.id));
      setTimeout(
        () =>
          setUploads((all) =>
            all.filter((u) => !(ids.has(u.id) && u.status === "done")),
          ),
        3000,
      );
      if (onBatchDone) onBatchDone({ done, failed });
    },
    [notify, onBatchDone, patch, upload],
  );

  const cancel = useCallback((id) => {
    const controller = controllers.current.get(id);
    if (controller) controller.abort();
  }, []);
  const dismiss = useCallback(
    (id) => setUploads((all) => all.filter((u) => u.id !== id)),
    [],
  );
  return { uploads, start, cancel, dismiss };
}
