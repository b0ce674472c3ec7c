// SPDX-License-Identifier: Apache-2.0
// The same end-to-end workload as prodsm_bench_e2e, through the TypeScript client's
// IdempotentProducer (npm @durable-streams/client, pinned in package.json).
// Usage: node ts_producer.mjs <base-url> <records> <record-bytes> <flush-iterations>
// Prints one JSON object.
import { DurableStream, IdempotentProducer } from "@durable-streams/client"

const [base, recordsArg, bytesArg, flushArg] = process.argv.slice(2)
const records = Number(recordsArg ?? 1000000)
const recordBytes = Number(bytesArg ?? 100)
const flushIterations = Number(flushArg ?? 200)
const contentType = "application/octet-stream"

async function newStream(name) {
  return DurableStream.create({ url: `${base}/bench-ts/${name}-${process.pid}-${Date.now()}`, contentType })
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))]
}

async function throughput() {
  const stream = await newStream("throughput")
  const producer = new IdempotentProducer(stream, "bench-ts", { lingerMs: 5, maxInFlight: 5 })
  const record = "x".repeat(recordBytes - 1) + "\n"
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < records; i++) producer.append(record)
  await producer.flush()
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0) // this process's user + system time, µs
  await producer.close()
  return {
    records_per_s: records / seconds,
    mb_per_s: (records * recordBytes) / seconds / 1e6,
    seconds,
    client_cpu_ns_per_record: ((cpu.user + cpu.system) * 1000) / records,
  }
}

async function flushLatency(lingerMs) {
  const stream = await newStream(`flush${lingerMs}`)
  const producer = new IdempotentProducer(stream, `bench-ts-flush-${lingerMs}`, { lingerMs, maxInFlight: 5 })
  const latencies = []
  for (let i = 0; i < flushIterations; i++) {
    producer.append("f\n")
    const t0 = performance.now()
    await producer.flush()
    latencies.push(performance.now() - t0)
  }
  await producer.close()
  return { p50_ms: percentile(latencies, 50), p99_ms: percentile(latencies, 99) }
}

const result = {
  client: "@durable-streams/client IdempotentProducer",
  throughput: await throughput(),
  flush_linger_5ms: await flushLatency(5),
  flush_linger_1000ms: await flushLatency(1000),
}
console.log(JSON.stringify(result))
