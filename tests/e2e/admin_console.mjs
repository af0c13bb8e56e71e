// The admin console in a real browser (Debian's chromium through puppeteer-core, headless) and its security.
// Eight streams are held still on a decode instance whose prefill instance is stopped (SIGSTOP), so the KV
// pool does not move while it is compared: the page's block map equals /admin/requests' pool counts; the
// abort control of one row ends exactly that stream with `abort` and frees its blocks; drain answers a new
// request 503 while the live streams finish with `length` once the prefill instance resumes; resume reopens.
// Without a token every /admin path is 401; the read-only token acts on nothing (403); another Origin is 403.
//   node tests/e2e/admin_console.mjs <path-to-parley> [screenshot.png]
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { main, stream, post, get, sleep, assertNoLeaks } from './lib.mjs';

const CHROMIUM = process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium';
const SCREENSHOT = process.argv[3] ?? path.join(os.tmpdir(), 'parley-admin-console.png');
const auth = (token) => ({ Authorization: `Bearer ${token}` });
const kvPortOf = (server) => Number(server.logs().match(/KV transfer actor published on port (\d+)/)[1]);

async function security(t, base) {
  const paths = [['GET', '/admin'], ['GET', '/admin/events'], ['GET', '/admin/requests'], ['GET', '/admin/actors'],
                 ['GET', '/admin/config'], ['POST', '/admin/drain'], ['POST', '/admin/resume'], ['PUT', '/admin/log-level'],
                 ['POST', '/admin/reset-prefix-cache'], ['POST', '/admin/requests/cmpl-x/abort']];
  for (const [method, p] of paths) {
    const r = await fetch(base + p, { method });
    await r.arrayBuffer();
    assert.equal(r.status, 401, `${method} ${p} without a token`);
  }
  for (const [method, p] of paths.slice(5)) {
    const r = await fetch(base + p, { method, headers: auth('ro'), body: method === 'PUT' ? '{"level":"info"}' : undefined });
    assert.equal(r.status, 403, `${method} ${p} with the read-only token: ${await r.text()}`);
  }
  for (const p of ['/admin/requests', '/admin/actors']) assert.equal((await get(base, p, { headers: auth('ro') })).status, 200);
  const none = await fetch(base + '/admin/requests/cmpl-none/abort', { method: 'POST', headers: auth('adm') });
  assert.equal(none.status, 404, 'aborting a request that is not live');
  assert.match((await none.json()).error.message, /No live request cmpl-none/);
  const cross = await fetch(base + '/admin/drain', { method: 'POST', headers: { ...auth('adm'), Origin: 'http://evil.example' } });
  assert.equal(cross.status, 403, 'a drain from another origin');
  const page = await fetch(base + '/admin');
  assert.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  t.check();
}

async function poolCounts(base) {
  const view = JSON.parse((await get(base, '/admin/requests', { headers: auth('adm') })).text);
  return { used: view.kv_blocks.used, free: view.kv_blocks.free, live: view.requests.length };
}

async function pageCounts(page) {
  return page.evaluate(() => {
    const count = (s) => document.querySelectorAll(`#blocks .cell[data-state="${s}"]`).length;
    return { used: count('used'), free: count('free') + count('cached'), live: document.querySelectorAll('#requests tbody tr').length };
  });
}

// Waits until the page (its feed lags by up to a second) shows what /admin/requests shows.
async function pageAgrees(page, base, what) {
  let want, got;
  for (let i = 0; i < 60; i++) {
    want = await poolCounts(base);
    got = await pageCounts(page);
    if (JSON.stringify(want) === JSON.stringify(got)) return got;
    await sleep(200);
  }
  assert.fail(`${what}: the page shows ${JSON.stringify(got)}, /admin/requests ${JSON.stringify(want)}`);
}

main('admin_console', async (parley, t) => {
  assert.ok(fs.existsSync(CHROMIUM), `no browser at ${CHROMIUM} (setup.sh installs Debian's chromium)`);
  const prefill = await t.start(['--role', 'prefill', '--kv-port', '0', '--kv-host', '127.0.0.1'], { label: 'prefill' });
  const decode = await t.start(['--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(prefill)}`, '--kv-transfer-timeout', '120',
                                '--admin-token', 'adm', '--admin-read-token', 'ro', '--num-kv-blocks', '256'], { label: 'decode' });
  const { base } = decode;
  await security(t, base);

  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
                                           args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // (The page itself is a 401 by design, and /favicon.ico a 404: resource messages are not script errors.)
    page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });
    await page.goto(`${base}/admin#token=adm`);
    await page.waitForFunction(() => Number(document.body.dataset.snapshots ?? 0) >= 2, { timeout: 15000 });
    assert.equal(await page.evaluate(() => location.hash), '', 'the token left the address bar');

    // Eight streams held still: their prompts wait for KV from the stopped prefill instance.
    for (let i = 0; i < 30 && (await poolCounts(base)).live === 0; i++) {
      const peers = JSON.parse((await get(base, '/admin/requests', { headers: auth('adm') })).text).kv_transfer.peers;
      if (peers[0].up) break;
      await sleep(100);
    }
    prefill.proc.kill('SIGSTOP');
    const streams = Array.from({ length: 8 }, (_, i) => stream(base, '/v1/completions', {
      prompt: `Once upon a time there was a little ${'very '.repeat(i + 4)}happy dog`, max_tokens: 24, temperature: 0.8, seed: i }));
    for (let i = 0; i < 50 && (await poolCounts(base)).live < 8; i++) await sleep(100);
    const held = await pageAgrees(page, base, 'eight streams held');
    assert.equal(held.live, 8);
    assert.equal(await page.evaluate(() => document.querySelectorAll('td.prompt').length), 0, 'no prompt text without --admin-show-prompts');
    const busy = await fetch(base + '/admin/reset-prefix-cache', { method: 'POST', headers: auth('adm') });
    assert.equal(busy.status, 409, 'no prefix cache reset while requests hold blocks');
    assert.ok(held.used >= 8, `the eight prompts hold blocks (${held.used}; they share a cached first block)`);
    t.check();

    // The abort control of the third stream's row.
    const view = JSON.parse((await get(base, '/admin/requests', { headers: auth('adm') })).text);
    const victim = view.requests[2].user_request;
    await page.click(`button[data-action="abort"][data-id="${victim}"]`);
    for (let i = 0; i < 50 && (await poolCounts(base)).live !== 7; i++) await sleep(100);
    const after = await pageAgrees(page, base, 'after the abort');
    assert.equal(after.live, 7, 'exactly one request ended');
    assert.ok(after.used < held.used, `its blocks were freed (${held.used} -> ${after.used})`);
    t.check();

    // Drain: a new request gets 503 and /health says draining; the held streams finish once the prefill resumes.
    await page.click('button[data-action="drain"]');
    for (let i = 0; i < 20 && (await get(base, '/health')).status !== 503; i++) await sleep(100);
    assert.equal((await get(base, '/health')).status, 503);
    const refused = await post(base, '/v1/completions', { model: 'stories260K', prompt: 'Hello', max_tokens: 4 });
    assert.equal(refused.status, 503);
    assert.match(refused.json.error.message, /draining/);
    await page.waitForFunction(() => document.getElementById('drain-state').textContent === 'DRAINING', { timeout: 5000 });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    prefill.proc.kill('SIGCONT');
    const done = await Promise.all(streams);
    const reasons = done.map((s) => s.finishReasons[0] ?? 'none');
    assert.equal(reasons.filter((r) => r === 'abort').length, 1, `finish reasons: ${reasons}`);
    assert.equal(reasons.filter((r) => r === 'length').length, 7, `finish reasons: ${reasons}`);
    const aborted = done.find((s) => s.finishReasons[0] === 'abort');
    assert.equal(`${aborted.chunks.at(-1).id}-0`, victim, 'the stream of the row whose abort was clicked (engine id = id-choice)');
    await page.click('button[data-action="resume"]');
    for (let i = 0; i < 20 && (await get(base, '/health')).status !== 200; i++) await sleep(100);
    const again = await post(base, '/v1/completions', { model: 'stories260K', prompt: 'Hello', max_tokens: 4 });
    assert.equal(again.status, 200, 'resume reopens');
    await pageAgrees(page, base, 'at the end');
    const reset = await fetch(base + '/admin/reset-prefix-cache', { method: 'POST', headers: auth('adm') });
    assert.equal(reset.status, 200, 'the prefix cache reset once nothing holds a block');
    assert.equal(JSON.parse((await get(base, '/admin/requests', { headers: auth('adm') })).text).kv_blocks.cached, 0);
    await assertNoLeaks(base, { label: 'decode' });
    t.check();

    // The log level control, and the audit lines of every action.
    await page.select('select[data-action="log-level"]', 'debug');
    for (let i = 0; i < 20 && !/log level info -> debug/.test(decode.logs()); i++) await sleep(100);
    for (const line of [/admin action by .*: abort cmpl-/, /admin action by .*: drain/, /admin action by .*: resume/, /log level info -> debug/])
      assert.match(decode.logs(), line);
    assert.deepEqual(errors, [], 'no script error in the page');
    const size = fs.statSync(SCREENSHOT).size;
    assert.ok(size > 20000, `the screenshot ${SCREENSHOT} has ${size} bytes`);
    t.check();
    t.note(`screenshot ${SCREENSHOT} (${size} bytes)`);
  } finally {
    prefill.proc.kill('SIGCONT');
    await browser.close();
  }
});
