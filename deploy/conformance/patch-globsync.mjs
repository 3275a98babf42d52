// Node 20 shim for @modelcontextprotocol/conformance@0.1.16 (run by package.json's check-install).
//
// Its bundled dist/index.js does `import { …, globSync as X, … } from "fs"` at load
// time; `fs.globSync` exists only from Node 22, so on Node 20 the whole CLI dies with
// "The requested module 'fs' does not provide an export named 'globSync'". Only the
// report/tier-check command calls it (to find **/checks.json), never `server`.
// This drops that one named import and binds X to fs.globSync when present, or to a
// stub that throws if ever called. Idempotent (a marker comment), a no-op on Node >= 22.
import { readFileSync, writeFileSync } from "node:fs";

const MARKER = "/*lro: globSync shim*/";
const file = process.argv[2];
if (!file) {
  console.error("usage: node patch-globsync.mjs path/to/conformance/dist/index.js");
  process.exit(2);
}
const major = Number(process.versions.node.split(".")[0]);
if (major >= 22) {
  console.log(`patch-globsync: Node ${process.versions.node} has fs.globSync, nothing to do`);
  process.exit(0);
}
const src = readFileSync(file, "utf8");
if (src.includes(MARKER)) {
  process.exit(0); // already patched
}
// The import statement of "fs" that names globSync (minified: `import{…,globSync as o,…}from"fs";`).
const re = /import\s*\{([^}]*)\}\s*from\s*["'](?:node:)?fs["'];?/g;
let local = null;
const out = src.replace(re, (stmt, names) => {
  const parts = names.split(",").map((s) => s.trim()).filter(Boolean);
  const keep = [];
  for (const p of parts) {
    const m = /^globSync(?:\s+as\s+([A-Za-z_$][\w$]*))?$/.exec(p);
    if (m) local = m[1] ?? "globSync";
    else keep.push(p);
  }
  if (keep.length === parts.length) return stmt; // not the one
  const rest = keep.length ? `import{${keep.join(",")}}from"fs";` : "";
  return (
    `${rest}import*as __lroFs from"fs";${MARKER}` +
    `const ${local}=__lroFs.globSync??(()=>{throw Error("fs.globSync needs Node >= 22 (stubbed by deploy/conformance/patch-globsync.mjs)")});`
  );
});
if (local === null) {
  console.error(`patch-globsync: no \`globSync\` import from "fs" in ${file}; nothing patched`);
  process.exit(1);
}
writeFileSync(file, out);
console.log(`patch-globsync: stubbed fs.globSync (as ${local}) in ${file}`);
