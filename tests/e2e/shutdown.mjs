// Graceful shutdown (MISSION C11: on SIGTERM stop accepting, finish or abort within a grace period): live
// streams must end properly -- a finish_reason (or an in-band error) and `data: [DONE]` -- rather than
// being cut, and the process exits 0 soon after the streams end.
//   node tests/e2e/shutdown.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, stream, sleep } from './lib.mjs';

// grace: the server's --shutdown-grace; with 0 every live stream must end with finish_reason "abort".
async function signalDuringStreams(t, grace) {
  const server = await t.start(['--shutdown-grace', String(grace)]);
  let signalled = false;
  const streams = Array.from({ length: 4 }, (_, i) =>
    stream(server.base, '/v1/completions', { prompt: `Once ${i}`, max_tokens: grace > 0 ? 150 : 500, ignore_eos: true, seed: i }, {
      onChunk: (_, n) => {
        if (i === 0 && n === 3 && !signalled) {
          signalled = true;
          server.proc.kill('SIGTERM');
        }
      },
    }).catch((e) => ({ thrown: `${e.message} ${e.cause?.code ?? ''}` })));
  const results = await Promise.all(streams);
  assert.ok(signalled, 'SIGTERM was never sent');
  results.forEach((r, i) => {
    assert.ok(!r.thrown, `stream ${i}: the connection broke on SIGTERM: ${r.thrown}`);
    assert.equal(r.status, 200);
    const ended = r.finishReasons[0] !== undefined || r.errors.length > 0;
    if (grace === 0) assert.equal(r.finishReasons[0], 'abort', `grace 0: stream ${i} ended with ${r.finishReasons[0]}`);
    else assert.equal(r.finishReasons[0], 'length', `grace ${grace}: stream ${i} should finish, ended with ${r.finishReasons[0]}`);
    assert.ok(ended && r.done,
              `stream ${i} was cut by SIGTERM after ${r.chunks.length} chunks: finish_reason ${r.finishReasons[0] ?? 'none'}, ` +
              `in-band errors ${JSON.stringify(r.errors)}, [DONE] ${r.done}`);
  });
  t.check();
  const deadline = Date.now() + 10000;
  while (server.alive() && Date.now() < deadline) await sleep(50);
  assert.ok(!server.alive(), 'the server still runs 10 s after its streams ended');
  const { code, signal } = await server.stop();
  assert.equal(code, 0, `exit after SIGTERM: code ${code}, signal ${signal}`);
  t.check();
}

main('shutdown', async (parley, t) => {
  await signalDuringStreams(t, 60);  // live streams finish within the grace period (generous: sanitizer builds are slow)
  await signalDuringStreams(t, 0);   // no grace: they are aborted, and still end properly
});
