// Drives the console's own tus-js-client (ui/node_modules) against a live daemon:
// node tus_client.js BASE_URL ACCESS_TOKEN FILE. Prints one JSON line per upload.
const fs = require('fs');
const tus = require('tus-js-client');

const [base, token, file] = process.argv.slice(2);
const data = fs.readFileSync(file);

function upload({ metadata, chunkSize, uploadUrl, abortAt }) {
  return new Promise((resolve, reject) => {
    let aborted = false;
    const options = {
      endpoint: `${base}/api/portal/files/tus/`,
      headers: { Authorization: `Bearer ${token}` },
      metadata,
      retryDelays: [0, 200],
      onError: reject,
      onSuccess: () => resolve({ url: upload.url, done: true }),
      onProgress: (sent) => {
        if (abortAt && sent >= abortAt && !aborted) {
          aborted = true; // the connection is closed midway: the next start resumes
          upload.abort().then(() => resolve({ url: upload.url, done: false }));
        }
      },
    };
    if (chunkSize) options.chunkSize = chunkSize;
    if (uploadUrl) options.uploadUrl = uploadUrl;
    const upload = new tus.Upload(data, options);
    upload.start();
  });
}

(async () => {
  const whole = await upload({ metadata: { filename: 'whole.bin', path: '/' } });
  console.log(JSON.stringify({ name: 'whole', ...whole }));
  const chunked = await upload({
    chunkSize: 1024 * 1024,
    metadata: { filename: 'chunked.bin', path: '/up', relativePath: 'album/chunked.bin' },
  });
  console.log(JSON.stringify({ name: 'chunked', ...chunked }));
  const cut = await upload({ chunkSize: 1024 * 1024, abortAt: 2 * 1024 * 1024, metadata: { filename: 'resumed.bin' } });
  console.log(JSON.stringify({ name: 'cut', ...cut }));
  const resumed = await upload({ chunkSize: 1024 * 1024, uploadUrl: cut.url, metadata: { filename: 'resumed.bin' } });
  console.log(JSON.stringify({ name: 'resumed', ...resumed }));
})().catch((error) => {
  console.error(error && error.message ? error.message : error);
  process.exit(1);
});
