// `parley admin` in a terminal under tmux (send-keys, capture-pane): four streams held still on a decode
// instance whose prefill instance is stopped appear; `a` aborts exactly the selected one; `d` drains (/health
// 503), `r` resumes; with the read-only token `d` shows the 403; `q` quits; `--once --json` prints a snapshot.
//   node tests/e2e/admin_terminal.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { main, stream, get, sleep, assertNoLeaks } from './lib.mjs';

const auth = { Authorization: 'Bearer adm' };
const kvPortOf = (server) => Number(server.logs().match(/KV transfer actor published on port (\d+)/)[1]);
// A tmux server of its own (-L), so that the test never touches a user's sessions.
const SOCKET = `parley-test-${process.pid}`;
const tmux = (...args) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const sessionAlive = (session) => {
  try {
    return tmux('list-sessions').includes(session);
  } catch {
    return false;  // the server went with its last session
  }
};
const live = async (base) => JSON.parse((await get(base, '/admin/requests', { headers: auth })).text).requests;

async function paneShows(session, re, what) {
  let text = '';
  for (let i = 0; i < 50; i++) {
    text = tmux('capture-pane', '-p', '-t', session);
    if (re.test(text)) return text;
    await sleep(100);
  }
  assert.fail(`${what}: the pane never showed ${re}:\n${text}`);
}

main('admin_terminal', async (parley, t) => {
  const prefill = await t.start(['--role', 'prefill', '--kv-port', '0', '--kv-host', '127.0.0.1'], { label: 'prefill' });
  const decode = await t.start(['--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(prefill)}`, '--kv-transfer-timeout', '120',
                                '--admin-token', 'adm', '--admin-read-token', 'ro'], { label: 'decode' });
  const { base } = decode;
  const once = JSON.parse(execFileSync(parley, ['admin', '--url', base, '--token', 'ro', '--once', '--json'], { encoding: 'utf8' }));
  assert.equal(once.requests.requests.length, 0);
  assert.ok(once.actors.actors.some((a) => a.name === 'scheduler'), '--once --json: the actors');
  t.check();

  for (let i = 0; i < 50 && !JSON.parse((await get(base, '/admin/requests', { headers: auth })).text).kv_transfer.peers[0].up; i++) await sleep(100);
  prefill.proc.kill('SIGSTOP');
  const session = `parley-admin-${process.pid}`;
  try {
    const streams = Array.from({ length: 4 }, (_, i) => stream(base, '/v1/completions',
      { prompt: `Tom had a ${'big '.repeat(i + 1)}ball`, max_tokens: 8, temperature: 0.8, seed: i }));
    for (let i = 0; i < 50 && (await live(base)).length < 4; i++) await sleep(100);
    const ids = (await live(base)).map((r) => r.id).sort();
    assert.equal(ids.length, 4);

    tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', parley, 'admin', '--url', base, '--token', 'adm', '--interval', '0.2');
    await paneShows(session, new RegExp(`> ${ids[0]}`), 'the requests, the first selected');
    for (const id of ids) assert.match(tmux('capture-pane', '-p', '-t', session), new RegExp(id));
    tmux('send-keys', '-t', session, 'j');  // select the second
    await paneShows(session, new RegExp(`> ${ids[1]}`), 'the selection moved');
    tmux('send-keys', '-t', session, 'a');
    await paneShows(session, /abort .*: done/, 'the abort answered');
    for (let i = 0; i < 50 && (await live(base)).length !== 3; i++) await sleep(100);
    assert.deepEqual((await live(base)).map((r) => r.id).sort(), ids.filter((id) => id !== ids[1]), 'exactly the selected request ended');
    t.check();

    tmux('send-keys', '-t', session, 'd');
    await paneShows(session, /DRAINING/, 'drain');
    assert.equal((await get(base, '/health')).status, 503);
    tmux('send-keys', '-t', session, 'r');
    await paneShows(session, /accepting/, 'resume');
    assert.equal((await get(base, '/health')).status, 200);
    tmux('send-keys', '-t', session, 'q');
    for (let i = 0; i < 50 && sessionAlive(session); i++) await sleep(100);
    assert.ok(!sessionAlive(session), 'q quits');
    t.check();

    // The read-only token looks and may not act.
    tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', parley, 'admin', '--url', base, '--token', 'ro', '--interval', '0.2');
    await paneShows(session, /live 3/, 'the read-only console');
    tmux('send-keys', '-t', session, 'd');
    await paneShows(session, /drain: 403 The read-only admin token may not act/, 'the refusal');
    assert.equal((await get(base, '/health')).status, 200);
    tmux('send-keys', '-t', session, 'q');
    prefill.proc.kill('SIGCONT');
    const reasons = (await Promise.all(streams)).map((s) => s.finishReasons[0]).sort();
    assert.deepEqual(reasons, ['abort', 'length', 'length', 'length']);
    await assertNoLeaks(base, { label: 'decode' });
    t.check();
  } finally {
    prefill.proc.kill('SIGCONT');
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone: `q` ends the console, and the tmux server goes with its last session
    }
  }
});
