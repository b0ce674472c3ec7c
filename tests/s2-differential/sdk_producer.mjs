// SPDX-License-Identifier: Apache-2.0
// The official SDK's Producer (@s2-dev/streamstore) running one differential scenario
// against the S2 test server (tests/s2-server/server.mjs), for
// tests/integration/test_s2_differential.cpp, which runs the same scenario through
// prodsm's S2 producer and compares the streams and the per-record outcomes.
//
// Usage: node sdk_producer.mjs URL BASIN STREAM SCENARIO_JSON
// SCENARIO_JSON: {"producer": {"fencing_token"?: t, "match_seq_num"?: n},
//                 "steps": [S, ...]} with S one of
//   {"records": ["a", ...]}   submit them, then flush: one batch (outcomes recorded)
//   {"fence": "token"}        a third party appends a fence command record
//   {"other": "body"}         a third party appends one record
//   {"fault": F}              queue a test-server fault for this stream (server.mjs)
// Prints one JSON line: {"outcomes": ["ok:<seq_num>" | "fail:<class>", ...]}, one per
// record in submit order; class: seq_num_mismatch, fencing_token_mismatch or failed.
// The session is the SDK's unary transport (forceTransport "fetch": the test server
// speaks HTTP/1.1), retries as the SDK's defaults but with short delays.
import {
  AppendInput,
  AppendRecord,
  BatchTransform,
  FencingTokenMismatchError,
  Producer,
  S2,
  SeqNumMismatchError,
} from "@s2-dev/streamstore";

const [url, basinName, streamName, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const s2 = new S2({
  accessToken: "any-token",
  endpoints: { account: url, basin: url },
  retry: { maxAttempts: 3, minBaseDelayMillis: 1, maxBaseDelayMillis: 5 },
});
const basin = s2.basin(basinName);
const stream = basin.stream(streamName, { forceTransport: "fetch" });
const thirdParty = basin.stream(streamName, { forceTransport: "fetch" });

const classify = (err) =>
  err instanceof SeqNumMismatchError
    ? "fail:seq_num_mismatch"
    : err instanceof FencingTokenMismatchError
      ? "fail:fencing_token_mismatch"
      : "fail:failed";

const p = scenario.producer ?? {};
const session = await stream.appendSession({}, {});
const producer = new Producer(
  new BatchTransform({
    lingerDurationMillis: 60_000, // batches end at the flush of each step
    maxBatchRecords: 1000,
    fencingToken: p.fencing_token,
    matchSeqNum: p.match_seq_num,
  }),
  session,
);

const outcomes = [];
for (const step of scenario.steps) {
  if (step.fence !== undefined) {
    await thirdParty.append(AppendInput.create([AppendRecord.fence(step.fence)]));
  } else if (step.other !== undefined) {
    await thirdParty.append(AppendInput.create([AppendRecord.string({ body: step.other })]));
  } else if (step.fault !== undefined) {
    const res = await fetch(`${url}/_test/faults`, {
      method: "POST",
      body: JSON.stringify({ faults: [{ ...step.fault, stream: streamName }] }),
    });
    if (res.status !== 200) throw new Error(`fault not queued: ${res.status}`);
  } else if (step.records !== undefined) {
    const acks = [];
    for (const body of step.records) {
      try {
        const ticket = await producer.submit(AppendRecord.string({ body }));
        acks.push(ticket.ack().then((a) => `ok:${a.seqNum()}`, classify));
      } catch (err) {
        acks.push(Promise.resolve(classify(err)));
      }
    }
    try {
      await producer.flush();
    } catch {
      // the records' own outcomes say what failed
    }
    outcomes.push(...(await Promise.all(acks)));
  }
}
try {
  await producer.close();
} catch {
  // a failed producer's close throws its terminal error, already in the outcomes
}
process.stdout.write(JSON.stringify({ outcomes }) + "\n");
