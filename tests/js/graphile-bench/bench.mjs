// Measures graphile-worker on this machine, so that the Rust worker's figures
// can be set beside it from the same run. A benchmark only: no test or CI
// step runs it. Run it through tests/js/graphile_bench.sh, which installs the
// pinned version and runs this file from the install directory.
//
//   latency --samples N --scheduled M [--concurrency C] [--warmup W]
//       M jobs scheduled an hour ahead (rows the worker must skip), then N
//       jobs added one at a time from a separate plain pg connection, as an
//       application would; latency = handler start - just before add_job.
//   throughput --jobs N [--concurrency C] [--local-queue SIZE]
//              [--complete-batch-delay MS]
//       N ready jobs added before the worker starts; time from run() to the
//       Nth handler having run and every job row being gone, plus CPU per job
//       of this node process and of all PostgreSQL processes.
//   common: [--database-url URL] [--no-prepared-statements] [--async-commit]
//       --async-commit sets synchronous_commit = off on the bench database:
//       each job is two commits (lock, then delete), and with an fsync per
//       commit the disk rather than the queue sets the pace at low concurrency.
//
// The database nomos_bench_graphile on that server is dropped and recreated
// on every run, and left behind afterwards for inspection.

import { readFileSync, readdirSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { EventEmitter } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { run, runMigrations, Logger } from "graphile-worker";

const VERSION = createRequire(import.meta.url)("graphile-worker/package.json").version;
const BENCH_DB = "nomos_bench_graphile";
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

function usage(problem) {
  console.error(`${problem}\nusage: bench.mjs latency|throughput [options]; see the header of bench.mjs`);
  process.exit(2);
}

function parseArgs(argv) {
  const [mode, ...rest] = argv;
  const opts = {
    mode,
    databaseUrl: "postgres://postgres@127.0.0.1:5432/postgres",
    samples: 200,
    scheduled: 0,
    warmup: 10,
    jobs: 10000,
    concurrency: 1,
    localQueue: 0,
    completeBatchDelay: -1,
    preparedStatements: true,
    asyncCommit: false,
  };
  const numeric = {
    "--samples": "samples", "--scheduled": "scheduled", "--warmup": "warmup",
    "--jobs": "jobs", "--concurrency": "concurrency", "--local-queue": "localQueue",
    "--complete-batch-delay": "completeBatchDelay",
  };
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    if (flag === "--database-url") opts.databaseUrl = rest[++i];
    else if (flag === "--no-prepared-statements") opts.preparedStatements = false;
    else if (flag === "--async-commit") opts.asyncCommit = true;
    else if (numeric[flag]) {
      const v = Number(rest[++i]);
      if (!Number.isInteger(v)) usage(`${flag} needs an integer, got ${rest[i]}`);
      opts[numeric[flag]] = v;
    } else usage(`unknown argument ${flag}`);
  }
  if (mode !== "latency" && mode !== "throughput") usage(`unknown mode ${mode}`);
  return opts;
}

// graphile-worker logs an info line per completed job; formatting and
// writing 10,000 of them would be measured along with the queue itself.
const quietLogger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") {
    console.error(`graphile-worker ${level}: ${message}`);
  }
});

async function recreateDatabase(adminUrl, asyncCommit) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${BENCH_DB}`);
    await admin.query(`create database ${BENCH_DB}`);
    if (asyncCommit) await admin.query(`alter database ${BENCH_DB} set synchronous_commit = off`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${BENCH_DB}`;
  return url.toString();
}

// One statement for the whole batch, through the public SQL API, so the
// rows look exactly like rows an application would have added.
async function addJobsInBulk(client, count, runAtOffset, payloadSign) {
  if (count <= 0) return;
  await client.query(
    `select count(*) from graphile_worker.add_jobs(array(
       select row('bench', json_build_object('i', $3::int * g), null,
                  now() + $2::interval, null, null, null, null)::graphile_worker.job_spec
       from generate_series(1, $1::int) g))`,
    [count, runAtOffset, payloadSign],
  );
  // Fresh statistics, as a long-running queue table would have.
  await client.query("vacuum analyze");
}

function workerOptions(opts, benchUrl, taskList, events) {
  const options = {
    connectionString: benchUrl,
    concurrency: opts.concurrency,
    // The library warns below concurrency + 2: each busy worker holds a
    // client, plus the LISTEN client and completions.
    maxPoolSize: Math.max(10, opts.concurrency + 2),
    logger: quietLogger,
    taskList,
    events,
    noPreparedStatements: !opts.preparedStatements,
    // pollInterval left at the library default (2000 ms in 0.17): new jobs
    // are meant to be found through LISTEN "jobs:insert", not by polling.
  };
  const worker = {};
  if (opts.localQueue > 0) worker.localQueue = { size: opts.localQueue };
  if (opts.completeBatchDelay >= 0) worker.completeJobBatchDelay = opts.completeBatchDelay;
  if (Object.keys(worker).length > 0) options.preset = { worker };
  return options;
}

function settings(opts) {
  return [
    `concurrency ${opts.concurrency}`,
    opts.localQueue > 0 ? `local queue ${opts.localQueue}` : "no local queue",
    opts.completeBatchDelay >= 0 ? `completeJobBatchDelay ${opts.completeBatchDelay} ms` : null,
    opts.preparedStatements ? null : "no prepared statements",
    opts.asyncCommit ? "synchronous_commit off" : null,
  ].filter(Boolean).join(", ");
}

// utime + stime in clock ticks; the command name in field 2 may hold spaces.
function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

// Every PostgreSQL process, not only the backends serving the worker: the
// WAL writer, checkpointer and autovacuum do work on the queue's behalf too.
// A process that exits between the two readings loses its share.
function postgresTicks() {
  const byPid = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.startsWith("postgres:")) byPid.set(entry, cpuTicks(entry));
    } catch {
      // Gone since readdir, or not ours to read.
    }
  }
  return byPid;
}

function postgresTicksSince(before) {
  let total = 0;
  for (const [pid, ticks] of postgresTicks()) total += ticks - (before.get(pid) ?? 0);
  return total;
}

const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const ms = (ns) => Number(ns) / 1e6;

function percentile(sorted, p) {
  return sorted[Math.round((sorted.length - 1) * p)];
}

async function untilNoJobRows(client, where = "true", params = []) {
  for (;;) {
    const { rows } = await client.query(
      `select exists(select 1 from graphile_worker._private_jobs where ${where}) as left`,
      params,
    );
    if (!rows[0].left) return;
    await sleep(1);
  }
}

async function latency(opts, client, benchUrl) {
  await addJobsInBulk(client, opts.scheduled, "1 hour", -1);

  // Each sample registers its resolver before the job exists, so the
  // handler can never run first.
  const waiting = new Map();
  const taskList = {
    bench: async (payload) => {
      const ranAt = process.hrtime.bigint();
      waiting.get(payload.i)?.(ranAt);
      waiting.delete(payload.i);
    },
  };
  // A job added before the LISTEN connection is up would only be found by
  // the next poll, up to 2 s later, and be counted as latency.
  const events = new EventEmitter();
  const listening = new Promise((resolve) => events.once("pool:listen:success", resolve));
  const runner = await run(workerOptions(opts, benchUrl, taskList, events));
  await listening;

  const load = loadavg();
  const latencies = [];
  for (let k = 1; k <= opts.warmup + opts.samples; k++) {
    await sleep(Math.random() * 5);
    const ran = new Promise((resolve) => waiting.set(k, resolve));
    const t0 = process.hrtime.bigint();
    const { rows } = await client.query(
      "select id from graphile_worker.add_job('bench', json_build_object('i', $1::int))",
      [k],
    );
    const t1 = await ran;
    // Completion is a separate round trip after the handler resolves; the
    // next sample starts only once this one's row is gone.
    await untilNoJobRows(client, "id = $1", [rows[0].id]);
    if (k > opts.warmup) latencies.push(ms(t1 - t0));
  }
  await runner.stop();
  await runner.promise;

  latencies.sort((a, b) => a - b);
  const f = (x) => x.toFixed(2);
  console.log(
    `graphile-worker ${VERSION} latency, ${opts.scheduled} scheduled, ${opts.samples} samples: ` +
      `p50 ${f(percentile(latencies, 0.5))} ms, p99 ${f(percentile(latencies, 0.99))} ms, ` +
      `max ${f(latencies[latencies.length - 1])} ms`,
  );
  console.log(`  (${settings(opts)}, ${opts.warmup} warm-up samples not counted, loadavg ${load} -> ${loadavg()})`);
}

async function throughput(opts, client, benchUrl) {
  await addJobsInBulk(client, opts.jobs, "0 seconds", 1);

  let ran = 0;
  let allRan;
  const allRanPromise = new Promise((resolve) => (allRan = resolve));
  const taskList = {
    bench: async () => {
      if (++ran === opts.jobs) allRan();
    },
  };

  const load = loadavg();
  const nodeBefore = cpuTicks("self");
  const pgBefore = postgresTicks();
  const t0 = process.hrtime.bigint();
  const runner = await run(workerOptions(opts, benchUrl, taskList, undefined));
  await allRanPromise;
  // Polled only after the last handler, so the polling adds little.
  await untilNoJobRows(client);
  const t1 = process.hrtime.bigint();
  const nodeTicks = cpuTicks("self") - nodeBefore;
  const pgTicks = postgresTicksSince(pgBefore);
  const loadAfter = loadavg();
  await runner.stop();
  await runner.promise;

  const seconds = ms(t1 - t0) / 1000;
  const perJob = (ticks) => ((ticks * 1000) / CLK_TCK / opts.jobs).toFixed(3);
  console.log(
    `graphile-worker ${VERSION} throughput, ${opts.jobs} jobs, concurrency ${opts.concurrency}: ` +
      `${seconds.toFixed(2)} s = ${Math.round(opts.jobs / seconds)} jobs/s`,
  );
  console.log(
    `  cpu per job: node ${perJob(nodeTicks)} ms, postgres ${perJob(pgTicks)} ms ` +
      `(${nodeTicks} + ${pgTicks} ticks at ${CLK_TCK}/s)`,
  );
  console.log(`  (${settings(opts)}, loadavg ${load} -> ${loadAfter})`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const benchUrl = await recreateDatabase(opts.databaseUrl, opts.asyncCommit);
  // The schema must exist before jobs are added ahead of the worker.
  await runMigrations({ connectionString: benchUrl, logger: quietLogger });
  // A plain connection of its own, like an application's, not the worker's pool.
  const client = new pg.Client({ connectionString: benchUrl });
  await client.connect();
  try {
    if (opts.mode === "latency") await latency(opts, client, benchUrl);
    else await throughput(opts, client, benchUrl);
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
