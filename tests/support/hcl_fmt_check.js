// Checks that every .tf file under the given folders is laid out as
// hclwrite.Format lays it out: the formatter `terraform fmt` is built on,
// from npm @cdktf/hcl-tools (no registry here serves a terraform binary).
//
//   NODE_PATH=<tools>/node_modules node hcl_fmt_check.js DIR... [--write]
//
// Prints each file that differs with its first differing line, and exits
// 1 if any does (0 when all are formatted; --write rewrites them).
const fs = require("fs");
const path = require("path");
const { format } = require("@cdktf/hcl-tools");

function tfFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name.startsWith(".") ? [] : tfFiles(p);
    return e.name.endsWith(".tf") ? [p] : [];
  });
}

(async () => {
  const write = process.argv.includes("--write");
  const dirs = process.argv.slice(2).filter((a) => a !== "--write");
  let bad = 0;
  let n = 0;
  for (const file of dirs.flatMap(tfFiles)) {
    n++;
    const text = fs.readFileSync(file, "utf8");
    const formatted = await format(text);
    if (formatted === text) continue;
    bad++;
    if (write) {
      fs.writeFileSync(file, formatted);
      console.log(`formatted ${file}`);
      continue;
    }
    const a = text.split("\n");
    const b = formatted.split("\n");
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    console.log(`${file}:${i + 1}: not formatted\n  is:        ${JSON.stringify(a[i])}\n  formatted: ${JSON.stringify(b[i])}`);
  }
  if (n === 0) {
    console.log("no .tf files found");
    process.exit(1);
  }
  console.log(bad ? `${bad} of ${n} files not formatted` : `${n} files formatted`);
  process.exit(bad && !write ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
