#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The official SDK decodes what prodsm encodes: runs the writer (tests/s2/write_bodies.cpp,
// path in argv[2]), decodes every AppendInput body it prints with @s2-dev/streamstore's
// generated protobuf codec (dist/esm/generated/proto/s2.js, AppendInput.fromBinary, with
// unknown fields refused), and compares records, headers, timestamps, match_seq_num and
// fencing_token with the writer's inputs. Also re-encodes each decoded message with the
// SDK (AppendInput.toBinary) and requires the same bytes: prodsm writes what the SDK writes.
// Exit 0 when every case matches. Run by ctest (S2Codec.SdkDecodesProdsmBodies).
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const writer = process.argv[2];
if (!writer) {
  console.error("usage: sdk_decode_check.mjs <prodsm_s2_write_bodies>");
  process.exit(2);
}
const sdkDir = dirname(fileURLToPath(import.meta.resolve("@s2-dev/streamstore")));
const Proto = await import(pathToFileURL(join(sdkDir, "generated/proto/s2.js")).href);

const hex = (u8) => Buffer.from(u8 ?? new Uint8Array()).toString("hex");
const lines = execFileSync(writer, { maxBuffer: 256 * 1024 * 1024 }).toString("utf8").trim().split("\n");
let failures = 0;
const fail = (name, what) => {
  failures++;
  if (failures <= 20) console.error(`${name}: ${what}`);
};

for (const line of lines) {
  const c = JSON.parse(line);
  const body = Buffer.from(c.body_hex, "hex");
  let input;
  try {
    input = Proto.AppendInput.fromBinary(body, { readUnknownField: "throw" });
  } catch (err) {
    fail(c.name, `the SDK cannot decode it: ${err.message}`);
    continue;
  }
  if (input.records.length !== c.records.length) {
    fail(c.name, `${input.records.length} records, expected ${c.records.length}`);
    continue;
  }
  c.records.forEach((want, i) => {
    const got = input.records[i];
    if (hex(got.body) !== want.body_hex) fail(c.name, `record ${i}: body differs`);
    const headers = got.headers.map((h) => [hex(h.name), hex(h.value)]);
    if (JSON.stringify(headers) !== JSON.stringify(want.headers)) fail(c.name, `record ${i}: headers differ`);
    const ts = got.timestamp === undefined ? undefined : String(got.timestamp);
    if (ts !== want.timestamp) fail(c.name, `record ${i}: timestamp ${ts}, expected ${want.timestamp}`);
  });
  const match = input.matchSeqNum === undefined ? undefined : String(input.matchSeqNum);
  if (match !== c.match_seq_num) fail(c.name, `match_seq_num ${match}, expected ${c.match_seq_num}`);
  const token = input.fencingToken === undefined ? undefined : Buffer.from(input.fencingToken, "utf8").toString("hex");
  if (token !== c.fencing_token_hex) fail(c.name, `fencing_token ${token}, expected ${c.fencing_token_hex}`);
  const again = Buffer.from(Proto.AppendInput.toBinary(input));
  if (!again.equals(body)) fail(c.name, "the SDK re-encodes the decoded input to different bytes");
}

if (failures > 0) {
  console.error(`${failures} mismatches in ${lines.length} bodies`);
  process.exit(1);
}
console.log(`the SDK decoded all ${lines.length} prodsm-encoded bodies to their inputs (and re-encodes them identically)`);
