// solve.cjs runs HiGHS (the pinned highs npm package: HiGHS compiled to
// WebAssembly, single-threaded) on one CPLEX LP file for the benchmark
// report, as a peer of optd's exact ITA:
//
//   node solve.cjs FILE.lp TIME_LIMIT_SECONDS
//
// It prints one JSON object on stdout: the status in HiGHS's words, the
// objective, the nonzero column values by name and the seconds spent in
// solve() (parsing the LP text included, loading the WebAssembly module not).
// The relative and absolute MIP gaps are 0 (HiGHS's defaults, 1e-4 and 1e-6,
// would stop before proving optimality), as for optd and CBC.
"use strict";
const fs = require("fs");
const loadHighs = require("highs");

async function main() {
  const [file, limit] = process.argv.slice(2);
  if (!file || !(Number(limit) > 0)) {
    process.stderr.write("usage: node solve.cjs FILE.lp TIME_LIMIT_SECONDS\n");
    process.exit(2);
  }
  const text = fs.readFileSync(file, "utf8");
  const highs = await loadHighs();
  const start = process.hrtime.bigint();
  const res = highs.solve(text, {
    time_limit: Number(limit),
    mip_rel_gap: 0,
    mip_abs_gap: 0,
    threads: 1,
    output_flag: false,
  });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const values = {};
  for (const [name, col] of Object.entries(res.Columns || {})) {
    if (col.Primal !== undefined && col.Primal !== 0) values[name] = col.Primal;
  }
  process.stdout.write(JSON.stringify({ status: res.Status, objective: res.ObjectiveValue, values, seconds }) + "\n");
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(1);
});
