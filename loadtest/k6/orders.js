// orders.js: drives one or both order services at the same moment with an arrival-rate load
// (k6 1.1). Every setting is an environment variable (k6 run -e NAME=value, or the environment):
//
//   TARGETS        name=url list, default "pg=http://127.0.0.1:8080,mongo=http://127.0.0.1:8081";
//                  one scenario per target, identical settings, every metric tagged target=name
//   RATE, DURATION constant-arrival-rate: RATE requests/s for DURATION (default 30s)
//   START_RATE, STEP, STEP_DURATION, MAX_RATE
//                  ramping-arrival-rate (used when RATE is unset): START_RATE, START_RATE+STEP, ...
//                  up to MAX_RATE, each rate held for STEP_DURATION (defaults 100, 100, 30s, 1000)
//   RATES          instead of START_RATE, STEP and MAX_RATE: the staircase's rates, comma-separated
//                  (what orders-bench round passes)
//   MIX            a mix of ../mixes.json: read | customer | product | insert | status | shop
//                  (default), or weights such as "read:50,product:30,insert:20"
//   MANIFEST       the data set manifest written by `orders-bench seed` (default
//                  .local/dataset.json); a relative path is taken from the working directory
//   SUMMARY        where handleSummary writes its JSON (default: k6-summary.json beside the
//                  manifest, e.g. .local/k6-summary.json, which git ignores)
//   PRINT_MIXES    set: print the endpoints and mixes as read from ../mixes.json, and MIX resolved,
//                  as one line `MIXES {...}` (for the test that compares them with orders-bench's)
//   P95_MS, MAX_FAILED_RATE   pass marks per target (default 50 ms and 0.01, as in study S1)
//   PRE_VUS, MAX_VUS, VU_BUDGET_MS, REQUEST_TIMEOUT   see vuSizing() and README.md
//   PREFER         "return=minimal": the writes carry `Prefer: return=minimal` (RFC 7240), so an
//                  insert is a 201 and a status change a 204, both without a body: the round
//                  measures the write, not returning the order (orders-bench experiment sets it)
//
// The script fails (k6 exits 99) when a target misses p(95), fails more than 1% of its requests,
// or drops any iteration: then the offered rate was not offered, and the run says nothing.
//
// Every request is also tagged with the `step` it was started in (0, 1, ...; always 0 at a constant
// rate), and the summary carries count, failures and latency per target and step, so one run that
// drives both targets up a staircase of rates tells at which step each one stopped passing.

import http from 'k6/http';
import exec from 'k6/execution';

const ENV = __ENV;

// --- what to drive ---------------------------------------------------------------------------

function parseTargets(text) {
  const targets = text.split(',').map((part) => part.trim()).filter((part) => part !== '').map((part) => {
    const at = part.indexOf('=');
    const name = part.slice(0, at);
    const url = part.slice(at + 1).replace(/\/+$/, '');
    if (at < 1 || !/^[A-Za-z0-9_-]+$/.test(name) || !/^https?:\/\/[^\s/]+/.test(url)) {
      throw new Error(`TARGETS: "${part}" is not name=http://host:port (name: letters, digits, _ or -)`);
    }
    return { name, url };
  });
  if (targets.length === 0) throw new Error('TARGETS names no target');
  if (new Set(targets.map((t) => t.name)).size !== targets.length) throw new Error('TARGETS repeats a name');
  return targets;
}

// --- the mixes: ../mixes.json, the one definition orders-bench's native generator reads too ------
// (endpoints: method, path template, expected status, body kind; mixes: endpoint weights). S1's
// "shop" is mostly order reads, product searches (the query behind finding F1), and enough inserts
// to grow the GIN pending list within the first step; see README.md for the reasoning.

const DEFINITIONS = JSON.parse(open('../mixes.json'));
const ENDPOINTS = DEFINITIONS.endpoints;
const MIXES = DEFINITIONS.mixes;
const ENDPOINT_NAMES = Object.keys(ENDPOINTS);

function withoutZeros(weights) {
  return Object.fromEntries(Object.entries(weights).filter(([, w]) => w > 0));
}

function parseMix(text) {
  if (MIXES[text]) return { name: text, weights: withoutZeros(MIXES[text]) };
  const weights = {};
  for (const part of text.split(',')) {
    const [endpoint, weight] = part.split(':').map((s) => s.trim());
    if (!ENDPOINT_NAMES.includes(endpoint) || !/^\d+$/.test(weight || '')) {
      throw new Error(`MIX: "${part}" is not endpoint:weight (endpoints ${ENDPOINT_NAMES.join(', ')}; ` +
        `or a named mix: ${Object.keys(MIXES).join(', ')})`);
    }
    weights[endpoint] = (weights[endpoint] || 0) + Number(weight);
  }
  for (const endpoint of Object.keys(weights)) if (weights[endpoint] === 0) delete weights[endpoint];
  if (Object.keys(weights).length === 0) throw new Error('MIX: the weights add up to 0');
  return { name: 'custom', weights };
}

const TARGETS = parseTargets(ENV.TARGETS || 'pg=http://127.0.0.1:8080,mongo=http://127.0.0.1:8081');
const MIX = parseMix(ENV.MIX || 'shop');
const MIX_ENDPOINTS = Object.keys(MIX.weights);
const MIX_TOTAL = MIX_ENDPOINTS.reduce((sum, e) => sum + MIX.weights[e], 0);
const P95_MS = positive('P95_MS', 50);
const MAX_FAILED_RATE = positive('MAX_FAILED_RATE', 0.01);
const REQUEST_TIMEOUT = ENV.REQUEST_TIMEOUT || '10s';

function positive(name, fallback) {
  if (ENV[name] === undefined || ENV[name] === '') return fallback;
  const value = Number(ENV[name]);
  if (!(value > 0)) throw new Error(`${name} must be a positive number, got "${ENV[name]}"`);
  return value;
}

// --- the data set ------------------------------------------------------------------------------

// k6 resolves a relative open() against the script's folder; users mean their working directory.
function manifestPath() {
  const path = ENV.MANIFEST || '.local/dataset.json';
  if (path.startsWith('/') || path.startsWith('file://')) return path;
  return ENV.PWD ? `${ENV.PWD}/${path}` : `../../${path}`;
}

const MANIFEST = JSON.parse(open(manifestPath()));
for (const range of ['order_ids', 'customer_ids', 'product_ids']) {
  const r = MANIFEST[range];
  if (!r || !(r.min >= 1) || !(r.max >= r.min)) throw new Error(`manifest ${manifestPath()}: bad ${range}`);
}

// --- the load model ------------------------------------------------------------------------------

// "30s", "2m", "1m30s", "500ms" or a number of seconds, in seconds.
function seconds(name, text) {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const units = { ms: 0.001, s: 1, m: 60, h: 3600 };
  let total = 0;
  const rest = text.replace(/(\d+(?:\.\d+)?)(ms|s|m|h)/g, (_, n, unit) => {
    total += Number(n) * units[unit];
    return '';
  });
  if (rest !== '' || total <= 0) throw new Error(`${name}: "${text}" is not a duration like 30s or 1m30s`);
  return total;
}

function wholeRate(name, fallback) {
  const value = positive(name, fallback);
  if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number of requests per second`);
  return value;
}

// The executor settings and the offered rate of every step, computed from the same numbers.
function loadModel() {
  if (ENV.RATE) {
    const rate = wholeRate('RATE', 0);
    const duration = seconds('DURATION', ENV.DURATION || '30s');
    return {
      executor: 'constant-arrival-rate',
      settings: { rate, timeUnit: '1s', duration: `${duration}s` },
      steps: [{ from_s: 0, to_s: duration, rate }],
      peak: rate,
    };
  }
  const hold = seconds('STEP_DURATION', ENV.STEP_DURATION || '30s');
  const rates = [];
  if (ENV.RATES) {
    for (const text of ENV.RATES.split(',')) {
      if (!/^\s*[1-9]\d*\s*$/.test(text)) throw new Error(`RATES: "${text}" is not a whole number of requests per second`);
      rates.push(Number(text));
    }
  } else {
    const start = wholeRate('START_RATE', 100);
    const step = wholeRate('STEP', 100);
    const max = wholeRate('MAX_RATE', 1000);
    if (max < start) throw new Error('MAX_RATE must be at least START_RATE');
    for (let rate = start; rate <= max; rate += step) rates.push(rate);
  }
  const steps = rates.map((rate, i) => ({ from_s: i * hold, to_s: (i + 1) * hold, rate }));
  // Each rate is held for a whole step; a 0 s stage jumps to the next rate at once.
  const stages = [];
  steps.forEach((s, i) => {
    if (i > 0) stages.push({ target: s.rate, duration: '0s' });
    stages.push({ target: s.rate, duration: `${hold}s` });
  });
  return {
    executor: 'ramping-arrival-rate',
    settings: { startRate: rates[0], timeUnit: '1s', stages },
    steps,
    peak: Math.max(...rates),
  };
}

// VUs per target. An arrival-rate executor needs one free VU per request in flight: at `rate`
// requests/s and latency L, rate × L of them. When none is free, k6 drops that iteration even
// below maxVUs (it only starts creating a VU then), so the pre-allocated pool is what must absorb
// latency spikes: enough for 250 ms (five times the p95 pass mark) at the peak rate. Up to
// VU_BUDGET_MS (default 1 s) of latency, k6 then grows the pool; beyond it the run fails on
// dropped iterations, and a service that slow failed its p95 mark long before. Floors keep low
// rates workable; the cap bounds k6's own memory (about 0.7 MB per VU with this script).
function vuSizing(peak) {
  const budgetMs = positive('VU_BUDGET_MS', 1000);
  const maxVUs = Math.round(positive('MAX_VUS', Math.min(5000, Math.max(20, Math.ceil((peak * budgetMs) / 1000)))));
  const preAllocatedVUs = Math.round(positive('PRE_VUS', Math.max(10, Math.ceil(peak * 0.25))));
  return { preAllocatedVUs: Math.min(preAllocatedVUs, maxVUs), maxVUs };
}

const LOAD = loadModel();
const VUS = vuSizing(LOAD.peak);
const GRACEFUL_STOP = '10s';

// --- the quantile grid ---------------------------------------------------------------------------

// Percentiles every latency figure carries besides p50..p99, so that the runs of several load
// droplets (k6 execution segments of one test) can be merged into the percentiles of all their
// requests together: orders-bench reads each run's grid as its latency distribution and inverts
// the count-weighted mixture (averaging percentiles would be wrong). Denser toward the tail.
const QUANTILE_GRID = [
  ...Array.from({ length: 99 }, (_, i) => i + 1),
  99.2, 99.4, 99.5, 99.6, 99.8, 99.9, 99.95, 99.99,
];

// [[percent, ms], ...] from 0 (min) to 100 (max); empty when the metric saw no request.
function quantiles(v) {
  if (v.min === undefined || v.max === undefined) return [];
  const grid = [[0, v.min], ...QUANTILE_GRID.map((q) => [q, v[`p(${q})`]]), [100, v.max]];
  return grid.filter(([, ms]) => ms !== undefined).map(([q, ms]) => [q, Math.round(ms * 1000) / 1000]);
}

// --- options: scenarios and thresholds ---------------------------------------------------------------

// Every sub-metric below costs k6 work on every request (each sample is matched against every
// sub-metric of its metric, and a Trend sub-metric keeps every value), so there are only those
// the summary needs: the pass marks per target, failures per endpoint (the runner counts writes;
// latency per endpoint is not kept), and per step failures and latency, of which the verdicts are
// made. Counts come with the failure rates (see requestFigures).
function thresholds() {
  const all = {};
  for (const { name } of TARGETS) {
    // The pass marks.
    all[`http_req_duration{target:${name}}`] = [`p(95)<${P95_MS}`];
    all[`http_req_failed{target:${name}}`] = [`rate<${MAX_FAILED_RATE}`];
    // k6 1.1 tags dropped_iterations with the scenario's name only, not with the scenario's
    // tags; each target's scenario is named after it.
    all[`dropped_iterations{scenario:${name}}`] = ['count<1'];
    // Always true: they only make k6 keep these sub-metrics for handleSummary.
    for (const endpoint of MIX_ENDPOINTS) {
      all[`http_req_failed{target:${name},endpoint:${endpoint}}`] = ['rate>=0'];
    }
    // The same per step, for the figures of every rate of the staircase.
    LOAD.steps.forEach((_, step) => {
      all[`http_req_duration{target:${name},step:${step}}`] = ['max>=0'];
      all[`http_req_failed{target:${name},step:${step}}`] = ['rate>=0'];
      // For orders-bench's live view only: k6's REST API gives a rate no count.
      all[`http_reqs{target:${name},step:${step}}`] = ['count>=0'];
    });
  }
  return all;
}

export const options = {
  scenarios: Object.fromEntries(TARGETS.map(({ name }) => [name, {
    executor: LOAD.executor,
    ...LOAD.settings,
    ...VUS,
    gracefulStop: GRACEFUL_STOP,
    exec: 'drive',
    tags: { target: name },
  }])),
  thresholds: thresholds(),
  summaryTrendStats: ['min', 'avg', 'med', 'p(90)', 'p(95)', 'p(99)', 'max', ...QUANTILE_GRID.map((q) => `p(${q})`)],
  discardResponseBodies: true,
  // Only the system tags worth a time series: every tag is work on every sample. No `url`: requests
  // are grouped by `name` (the route template), so no output (JSON, Prometheus) gets one time
  // series per order id.
  systemTags: ['status', 'method', 'name', 'scenario'],
  userAgent: 'orders-bench-k6/1',
};

// --- the requests, made from ../mixes.json's endpoints ---------------------------------------------
// Everything that does not change between requests is made once per VU here (k6 recommends this for
// response callbacks in particular), so an iteration only draws ids and builds a URL.

const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];
const STATUS_BODIES = STATUSES.map((status) => JSON.stringify({ status }));
const BASE_URL = Object.fromEntries(TARGETS.map(({ name, url }) => [name, url]));
// Inserted orders carry a note as long as the seeded ones, made like the seeder's (random words of
// the same list, loadtest/dataset/src/words.rs), so it compresses like theirs. Built once
// per VU.
const NOTE_WORDS = ('please deliver the parcel to my neighbour if nobody is at home ring twice gift wrap and no ' +
  'invoice inside leave it by back door call me before you arrive fragile handle with care thank so much for ' +
  'fast shipping order for birthday on friday morning office floor three reception desk weekend only after six ' +
  'pm code gate blue house corner garden shed box').split(' ');

function noteText(bytes) {
  const words = [];
  let length = -1;
  while (length < bytes) {
    const word = NOTE_WORDS[Math.floor(Math.random() * NOTE_WORDS.length)];
    words.push(word);
    length += word.length + 1;
  }
  return words.join(' ').slice(0, bytes);
}

const NOTE = MANIFEST.note_bytes > 0 ? noteText(MANIFEST.note_bytes) : null;
const JSON_HEADERS = { 'Content-Type': 'application/json' };
if (ENV.PREFER && ENV.PREFER !== 'return=minimal') throw new Error(`PREFER: "${ENV.PREFER}" is not return=minimal`);
const MINIMAL = ENV.PREFER === 'return=minimal';
const WRITE_HEADERS = MINIMAL ? { ...JSON_HEADERS, Prefer: 'return=minimal' } : JSON_HEADERS;
const ID_RANGES = { order_id: MANIFEST.order_ids, customer_id: MANIFEST.customer_ids, product_id: MANIFEST.product_ids };

function between(min, max) {
  return min + Math.floor(Math.random() * (max - min + 1));
}

function idIn(range) {
  return between(range.min, range.max);
}

// A new order shaped like the seeded ones; no id, so the service assigns a unique time-ordered one
// (no collisions across runs, targets or VUs).
function newOrder() {
  const customer = idIn(MANIFEST.customer_ids);
  const products = new Set();
  const wanted = Math.min(MANIFEST.items_per_order, MANIFEST.product_ids.max - MANIFEST.product_ids.min + 1);
  while (products.size < wanted) products.add(idIn(MANIFEST.product_ids));
  const body = {
    customer: { id: customer, name: 'Load Test', email: `load.test.${customer}@example.com` },
    items: [...products].map((product) => ({
      product_id: product,
      sku: `SKU-${String(product).padStart(6, '0')}`,
      name: 'Load Test Item',
      quantity: between(1, 3),
      unit_price_cents: between(1, 200) * 100 - 1,
    })),
    currency: 'EUR',
    shipping: { street: 'Hauptstraße 1', city: 'Berlin', postal_code: '10115', country: 'DE' },
  };
  if (NOTE) body.note = NOTE;
  return JSON.stringify(body);
}

const BODIES = {
  none: () => null,
  new_order: newOrder,
  status: () => STATUS_BODIES[between(0, STATUS_BODIES.length - 1)],
};

// `/customers/{customer_id}/orders?limit=20` → ['/customers/', 'customer_id', '/orders?limit=20']:
// text at even places, ids to draw at odd ones.
function pathParts(template) {
  return template.split(/\{(order_id|customer_id|product_id)\}/);
}

// One entry per endpoint of the mix: how to make its request, and its params per step (made the
// first time a step is reached).
const PLANS = Object.fromEntries(MIX_ENDPOINTS.map((endpoint) => {
  const e = ENDPOINTS[endpoint];
  if (!BODIES[e.body]) throw new Error(`../mixes.json: endpoint ${endpoint} has an unknown body kind ${e.body}`);
  return [endpoint, {
    method: e.method,
    parts: pathParts(e.path),
    body: BODIES[e.body],
    route: e.path.split('?')[0],
    // With `Prefer: return=minimal` a write answers without a body: 200 becomes 204 (201 stays).
    callback: http.expectedStatuses(MINIMAL && e.body !== 'none' && e.expect === 200 ? 204 : e.expect),
    headers: e.body === 'none' ? undefined : WRITE_HEADERS,
    params: [],
  }];
}));

function pathOf(parts) {
  let path = parts[0];
  for (let i = 1; i < parts.length; i += 2) path += idIn(ID_RANGES[parts[i]]) + parts[i + 1];
  return path;
}

function paramsOf(endpoint, plan, step) {
  if (!plan.params[step]) {
    plan.params[step] = {
      tags: { endpoint, name: plan.route, step: String(step) },
      responseCallback: plan.callback,
      timeout: REQUEST_TIMEOUT,
      headers: plan.headers,
    };
  }
  return plan.params[step];
}

function pickEndpoint() {
  let roll = Math.random() * MIX_TOTAL;
  for (const endpoint of MIX_ENDPOINTS) {
    roll -= MIX.weights[endpoint];
    if (roll < 0) return endpoint;
  }
  return MIX_ENDPOINTS[MIX_ENDPOINTS.length - 1];
}

// A VU serves one scenario (= one target) all its life: its base URL and start time are read once.
let vuBase = null;
let vuStart = 0;
// The step the VU's last iteration started in; steps only go up.
let vuStep = 0;

function stepNow() {
  const elapsed = (Date.now() - vuStart) / 1000;
  while (vuStep < LOAD.steps.length - 1 && elapsed >= LOAD.steps[vuStep].to_s) vuStep += 1;
  return vuStep;
}

// One iteration = one request to the scenario's target (scenario name = target name).
export function drive() {
  if (vuBase === null) {
    vuBase = BASE_URL[exec.scenario.name];
    vuStart = exec.scenario.startTime;
  }
  const endpoint = pickEndpoint();
  const plan = PLANS[endpoint];
  http.request(plan.method, vuBase + pathOf(plan.parts), plan.body(), paramsOf(endpoint, plan, stepNow()));
}

if (ENV.PRINT_MIXES) {
  console.log(`MIXES ${JSON.stringify({ endpoints: ENDPOINTS, mixes: MIXES, mix: MIX })}`);
}

// --- the summary -----------------------------------------------------------------------------------

function values(data, metric) {
  return (data.metrics[metric] && data.metrics[metric].values) || {};
}

function passed(data, metric) {
  const results = (data.metrics[metric] && data.metrics[metric].thresholds) || {};
  return Object.values(results).every((r) => r.ok);
}

function latency(v) {
  const round = (x) => (x === undefined ? null : Math.round(x * 1000) / 1000);
  return { p50: round(v.med), p90: round(v['p(90)']), p95: round(v['p(95)']), p99: round(v['p(99)']), max: round(v.max) };
}

// http_req_failed is a rate over every request: `passes` are the failed ones, `fails` the others,
// so it gives the count too and no http_reqs sub-metric is needed.
function requestFigures(data, tags, runSeconds) {
  const failed = values(data, `http_req_failed{${tags}}`);
  const count = (failed.passes || 0) + (failed.fails || 0);
  return {
    count,
    achieved_rate: Math.round((count / runSeconds) * 100) / 100,
    failures: failed.passes || 0,
    latency_ms: latency(values(data, `http_req_duration{${tags}}`)),
    quantiles_ms: quantiles(values(data, `http_req_duration{${tags}}`)),
  };
}

function buildSummary(data) {
  const runSeconds = data.state.testRunDurationMs / 1000;
  const plannedSeconds = LOAD.steps[LOAD.steps.length - 1].to_s;
  const offeredIterations = LOAD.steps.reduce((sum, s) => sum + s.rate * (s.to_s - s.from_s), 0);
  const targets = {};
  for (const { name, url } of TARGETS) {
    const endpoints = {};
    for (const endpoint of MIX_ENDPOINTS) {
      endpoints[endpoint] = requestFigures(data, `target:${name},endpoint:${endpoint}`, plannedSeconds);
    }
    // Counts and failures of the target are its steps' (every request belongs to one step).
    const steps = LOAD.steps.map((s, step) => ({
      step,
      from_s: s.from_s,
      to_s: s.to_s,
      rate: s.rate,
      offered_iterations: s.rate * (s.to_s - s.from_s),
      ...requestFigures(data, `target:${name},step:${step}`, s.to_s - s.from_s),
    }));
    const count = steps.reduce((sum, s) => sum + s.count, 0);
    const total = requestFigures(data, `target:${name}`, plannedSeconds);
    total.count = count;
    total.achieved_rate = Math.round((count / plannedSeconds) * 100) / 100;
    total.failures = steps.reduce((sum, s) => sum + s.failures, 0);
    targets[name] = {
      url,
      ...total,
      // One iteration = one request.
      iterations: count,
      offered_iterations: offeredIterations,
      dropped_iterations: values(data, `dropped_iterations{scenario:${name}}`).count || 0,
      thresholds: {
        p95: passed(data, `http_req_duration{target:${name}}`),
        failed_rate: passed(data, `http_req_failed{target:${name}}`),
        dropped_iterations: passed(data, `dropped_iterations{scenario:${name}}`),
      },
      endpoints,
      // Per step: requests started in that step (one iteration = one request, so offered minus
      // count is what the step fell short of, dropped iterations included) and their figures.
      steps,
    };
    targets[name].passed = Object.values(targets[name].thresholds).every((ok) => ok);
  }
  return {
    finished_at: new Date().toISOString(),
    run_seconds: runSeconds,
    planned_seconds: plannedSeconds,
    executor: LOAD.executor,
    executor_settings: { ...LOAD.settings, ...VUS, gracefulStop: GRACEFUL_STOP },
    offered: { steps: LOAD.steps, mean_rate: offeredIterations / plannedSeconds, peak_rate: LOAD.peak },
    mix: { name: MIX.name, weights: MIX.weights },
    pass_marks: { p95_ms: P95_MS, max_failed_rate: MAX_FAILED_RATE, dropped_iterations: 0 },
    data_set: {
      seed: MANIFEST.seed,
      orders: MANIFEST.orders,
      items_per_order: MANIFEST.items_per_order,
      note_bytes: MANIFEST.note_bytes,
      approx_doc_bytes: MANIFEST.approx_doc_bytes,
    },
    passed: Object.values(targets).every((t) => t.passed),
    targets,
    load_generator: { kind: 'k6' },
  };
}

function textReport(summary) {
  const fixed = (x, width) => String(x === null || x === undefined ? '-' : x).padStart(width);
  const lines = [
    `\n${summary.executor}, mix ${summary.mix.name} ${JSON.stringify(summary.mix.weights)}, ` +
      `offered ${summary.offered.steps.map((s) => s.rate).join('/')} req/s per target, ` +
      `${summary.planned_seconds} s planned`,
    `${'target'.padEnd(8)}${'endpoint'.padEnd(10)}${fixed('count', 9)}${fixed('req/s', 10)}${fixed('p50', 9)}` +
      `${fixed('p95', 9)}${fixed('p99', 9)}${fixed('max', 9)}${fixed('failed', 8)}${fixed('dropped', 9)}  verdict`,
  ];
  for (const [name, t] of Object.entries(summary.targets)) {
    const row = (label, f, dropped, verdict) => `${name.padEnd(8)}${label.padEnd(10)}${fixed(f.count, 9)}` +
      `${fixed(f.achieved_rate, 10)}${fixed(f.latency_ms.p50, 9)}${fixed(f.latency_ms.p95, 9)}` +
      `${fixed(f.latency_ms.p99, 9)}${fixed(f.latency_ms.max, 9)}${fixed(f.failures, 8)}${fixed(dropped, 9)}  ${verdict}`;
    lines.push(row('all', t, t.dropped_iterations, t.passed ? 'PASS' : `FAIL ${JSON.stringify(t.thresholds)}`));
    for (const [endpoint, f] of Object.entries(t.endpoints)) lines.push(row(endpoint, f, '', ''));
    if (t.steps.length > 1) for (const s of t.steps) lines.push(row(`@${s.rate}/s`, s, '', ''));
  }
  lines.push(`summary: ${SUMMARY_PATH}\n`);
  return lines.join('\n');
}

// Not the working directory itself: run by hand from the repository's root, the summary would land
// among the tracked files. The manifest's folder exists (k6 creates no folder) and is the run's
// own (.local/, git-ignored, by default).
const SUMMARY_PATH = ENV.SUMMARY || `${manifestPath().replace(/[^/]*$/, '')}k6-summary.json`;

export function handleSummary(data) {
  const summary = buildSummary(data);
  return {
    [SUMMARY_PATH]: `${JSON.stringify(summary, null, 2)}\n`,
    stdout: textReport(summary),
  };
}
