// Graceful shutdown (on SIGTERM stop accepting, finish or abort within a grace period): live
// streams must end properly -- a finish_reason (or an in-band error) and `data: [DONE]` -- rather than
// being cut, and the process exits 0 soon after the streams end. A request arriving after SIGTERM on a
// connection already open gets 503.
//   node tests/e2e/shutdown.mjs <path-to-parley>
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { main, stream, sleep, MODEL_NAME } from './lib.mjs';

// grace: the server's --shutdown-grace; with 0 every live stream must end with finish_reason "abort".
async function signalDuringStreams(t, grace) {
  const server = await t.start(['--shutdown-grace', String(grace)]);
  let signalled = false;
  const started = new Set();  // SIGTERM goes once every stream has a chunk: all four are live generations
  const streams = Array.from({ length: 4 }, (_, i) =>
    stream(server.base, '/v1/completions', { prompt: `Once ${i}`, max_tokens: grace > 0 ? 150 : 500, ignore_eos: true, seed: i }, {
      onChunk: (_, n) => {
        if (n >= 2) started.add(i);
        if (started.size === 4 && !signalled) {
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

// After SIGTERM, a request on a connection that is already open is refused with 503 while live ones finish.
async function refusedWhileDraining(t) {
  const server = await t.start(['--shutdown-grace', '60']);
  const ws = await new Promise((resolve, reject) => {
    const w = new WebSocket(`ws://127.0.0.1:${server.port}/v1/ws`);
    w.once('open', () => resolve(w));
    w.once('error', reject);
  });
  const messages = [];
  let late = null;
  const done = new Promise((resolve, reject) => {
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      messages.push(m);
      if (m.id === 'live' && m.type === 'delta' && !late) {
        late = 'pending';
        server.proc.kill('SIGTERM');
        (async () => {  // once the server has taken the signal, while the live request still runs
          while (!server.logs().includes('signal 15')) await sleep(2);
          ws.send(JSON.stringify({ type: 'request', id: 'late', endpoint: 'completions',
                                   body: { model: MODEL_NAME, prompt: 'Late', max_tokens: 4 } }));
        })();
      }
      if (messages.some((x) => x.id === 'live' && x.type === 'final') && messages.some((x) => x.id === 'late')) resolve();
    });
    ws.on('close', () => reject(new Error(`the websocket closed first: ${JSON.stringify(messages.slice(-3))}`)));
  });
  ws.send(JSON.stringify({ type: 'request', id: 'live', endpoint: 'completions',
                           body: { model: MODEL_NAME, prompt: 'Once', max_tokens: 500, ignore_eos: true, n: 8, temperature: 1, seed: 1 } }));
  await done;
  const refusal = messages.find((m) => m.id === 'late');
  assert.equal(refusal.type, 'error', `late request: ${JSON.stringify(refusal)}`);
  assert.equal(refusal.status, 503, `late request: ${JSON.stringify(refusal)}`);
  assert.equal(refusal.error.code, null, `late request: ${JSON.stringify(refusal)}`);
  assert.match(refusal.error.message, /shutting down/);
  const final = messages.find((m) => m.id === 'live' && m.type === 'final');
  assert.deepEqual(final.choices.map((c) => c.finish_reason), Array(8).fill('length'), 'the live request finishes within the grace period');
  ws.removeAllListeners('close');
  ws.close();
  const deadline = Date.now() + 10000;
  while (server.alive() && Date.now() < deadline) await sleep(50);
  assert.ok(!server.alive(), 'the server still runs 10 s after its last request ended');
  const { code } = await server.stop();
  assert.equal(code, 0);
  t.check();
}

main('shutdown', async (parley, t) => {
  await refusedWhileDraining(t);
  await signalDuringStreams(t, 60);  // live streams finish within the grace period (generous: sanitizer builds are slow)
  await signalDuringStreams(t, 0);   // no grace: they are aborted, and still end properly
});
