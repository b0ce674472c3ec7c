// SPDX-License-Identifier: Apache-2.0
// `prodsm bench URL`: a producer load test against a real server, in the manner of
// Kafka's producer perf test — N records of B bytes, optionally paced to R records/s,
// through the Asio producer with the same producer flags as `produce`; prints
// throughput and record latency (submit to acknowledgement) percentiles. Nothing here
// asserts a speed: it measures.
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>

#include "bench_support.hpp"
#include "commands.hpp"
#include "figures.hpp"
#include "interrupt.hpp"
#include "io_runner.hpp"
#include "numeric_flags.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "producer_flags.hpp"
#include "progress.hpp"
#include "s2_target.hpp"

namespace prodsm::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string url;
  std::uint64_t records = 100'000;
  std::uint64_t record_bytes = 100;
  double throughput = 0;  ///< records/s; 0 = as fast as the producer takes them
  std::string content_type = "application/octet-stream";
  bool create = false;
  bool json = false;
  std::uint64_t report_interval_ms = 5'000;
  ProducerFlags producer;
  S2Flags s2;                       ///< s2:// targets only
  bool identity_given = false;      ///< --producer-id, --epoch or --auto-claim was given
  bool content_type_given = false;  ///< --content-type was given
};

/// What the completion callbacks (on the I/O thread) collect.
struct Outcomes {
  std::mutex mu;
  std::vector<double> latency_ms;    ///< sampled records, submit to acknowledgement
  std::optional<Error> first_error;  ///< of a sampled record
};

/// Runs the load and prints the figures, for either producer (asio::Producer,
/// asio::S2Producer): the same loop, flush, close and report.
template <class P>
int measure(P& producer, const BenchOptions& o, const std::string& record) {
  const std::uint64_t every = sample_interval(o.records);
  auto outcomes = std::make_shared<Outcomes>();
  outcomes->latency_ms.reserve(static_cast<std::size_t>(o.records / every + 1));
  std::optional<Error> failure;
  std::uint64_t sent = 0;
  // Unpaced, the records between two timed ones go in chunks through submit_many (no
  // lock, clock read or callback per record); a refusal other than would_block ends the run.
  std::array<std::string_view, kChunkRecords> chunk;
  chunk.fill(record);
  const std::uint64_t cpu_started_ns = process_cpu_ns();
  const auto started = Clock::now();
  ProgressReporter<P> progress(producer, o.report_interval_ms, o.record_bytes);
  const auto submit_timeout = std::chrono::milliseconds{o.producer.delivery_timeout_ms};
  bool stopped = false;  // by SIGINT/SIGTERM
  for (std::uint64_t i = 0; i < o.records;) {
    if (o.throughput > 0) {
      // Pace: record i leaves no earlier than i / throughput s after the start. Slept in
      // steps of at most 100 ms (any rate, however small, without overflow; a signal is
      // seen quickly).
      const double due_s = static_cast<double>(i) / o.throughput;
      for (;;) {
        const double now_s = std::chrono::duration<double>(Clock::now() - started).count();
        if (now_s >= due_s || interrupted()) break;
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(due_s - now_s, 0.1)));
      }
    }
    if (interrupted()) {
      stopped = true;
      break;
    }
    tl::expected<Ticket, Rejection> r;  // the outcome of the call's last record
    std::uint64_t accepted = 1;         // records the call accepted, when r holds a ticket
    if (o.throughput == 0 && i % every != 0) {
      const std::uint64_t next_timed = (i / every + 1) * every;
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>({kChunkRecords, next_timed - i, o.records - i}));
      const SubmitManyResult many = producer.submit_many(std::span<const std::string_view>(chunk.data(), n));
      accepted = many.accepted;
      if (many.accepted == 0 && many.refused) {
        // R1: full (the refused record is submitted again, waiting for room); any
        // other refusal ends the run below.
        r = many.refused->reason == RejectReason::would_block
                ? producer.submit_blocking(record, submit_timeout)
                : tl::expected<Ticket, Rejection>(tl::unexpected(*many.refused));
        accepted = 1;
      }
    } else if (i % every == 0) {
      const auto t0 = Clock::now();
      r = producer.submit_blocking(record, submit_timeout, [outcomes, t0](const auto& result) {
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        std::lock_guard lock(outcomes->mu);
        if (result) {
          outcomes->latency_ms.push_back(ms);
        } else if (!outcomes->first_error) {
          outcomes->first_error = result.error();
        }
      });
    } else {
      r = producer.submit_blocking(record, submit_timeout);
    }
    if (!r) {
      failure = r.error().terminal ? *r.error().terminal : to_error(r.error());
      break;
    }
    i += accepted;
    sent += accepted;
    progress.add_sent(accepted);
  }
  // Everything accepted is flushed and acknowledged before the clock stops.
  if (auto flushed = producer.async_flush(::asio::use_future).get(); !flushed && !failure) failure = flushed.error();
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  const std::uint64_t cpu_ns = process_cpu_ns() - cpu_started_ns;
  progress.stop();  // the figures come after the last progress line
  if (auto closed = producer.async_close(::asio::use_future).get(); !closed && !failure) failure = closed.error();
  const auto stats = producer.stats();

  std::vector<double> latencies;
  {
    std::lock_guard lock(outcomes->mu);
    latencies = outcomes->latency_ms;
    if (!failure && outcomes->first_error) failure = outcomes->first_error;
  }
  std::sort(latencies.begin(), latencies.end());
  double sum = 0;
  for (double v : latencies) sum += v;
  const double avg = latencies.empty() ? 0 : sum / static_cast<double>(latencies.size());
  const double max = latencies.empty() ? 0 : latencies.back();
  const double rate = elapsed > 0 ? static_cast<double>(stats.core.records_succeeded) / elapsed : 0;
  const double bytes_rate = rate * static_cast<double>(o.record_bytes);
  // The client's cost: this process's CPU time (every thread: the caller's submits and
  // the I/O thread) from the first submit to the last acknowledgement, per record.
  const double cpu_ns_per_record = sent > 0 ? static_cast<double>(cpu_ns) / static_cast<double>(sent) : 0;
  // The producer's own submit-to-ack percentiles (every acknowledged record, stats()),
  // beside the CLI's sampled ones: two independent measurements of the same thing.
  const auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const LatencySummary& own = stats.submit_to_ack;
  if (o.json) {
    const nlohmann::json producer_latency = {{"records", own.count},     {"p50", ms(own.p50_ns)},
                                             {"p90", ms(own.p90_ns)},    {"p99", ms(own.p99_ns)},
                                             {"p99_9", ms(own.p999_ns)}, {"max", ms(own.max_ns)}};
    nlohmann::json latency = nullptr;  // no sampled record was acknowledged
    if (!latencies.empty()) {
      latency = {{"samples", latencies.size()},
                 {"sampled_every", every},
                 {"avg", avg},
                 {"p50", percentile_of_sorted(latencies, 50)},
                 {"p95", percentile_of_sorted(latencies, 95)},
                 {"p99", percentile_of_sorted(latencies, 99)},
                 {"p99_9", percentile_of_sorted(latencies, 99.9)},
                 {"max", max}};
    }
    nlohmann::json out = {
        {"records_sent", sent},
        {"records_acknowledged", stats.core.records_succeeded},
        {"records_failed", stats.core.records_failed},
        {"record_bytes", o.record_bytes},
        {"elapsed_s", elapsed},
        {"records_per_s", rate},
        {"bytes_per_s", bytes_rate},
        {"client_cpu_ns_per_record", cpu_ns_per_record},
        {"latency_ms", latency},
        {"producer_submit_to_ack_ms", producer_latency},
        {"batches", stats.core.batches_sealed},
        {"retries", stats.core.retries},
        {"gap_resends", stats.core.gap_resends},
        {"connections", stats.session.connections_opened},
        {"stalls", stats.session.stalls},
        {"interrupted", stopped},
    };
    if (failure) out["error"] = failure->describe();
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::string latency_text = "latency n/a (no sampled record was acknowledged)";
    if (!latencies.empty()) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "%.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, "
                    "%.2f ms 99.9th",
                    avg, max, percentile_of_sorted(latencies, 50), percentile_of_sorted(latencies, 95),
                    percentile_of_sorted(latencies, 99), percentile_of_sorted(latencies, 99.9));
      latency_text = buf;
    }
    std::printf("%llu records sent, %.1f records/sec (%s/sec), %s.\n", static_cast<unsigned long long>(sent), rate,
                format_bytes(bytes_rate).c_str(), latency_text.c_str());
    std::printf("client CPU: %.0f ns/record (this process, user + system, every thread)\n", cpu_ns_per_record);
    std::printf(
        "%llu acknowledged, %llu failed; %llu batches, %llu retries, %llu gap resends, "
        "%llu connections (%llu replaced by stall detection); latency sampled every %llu records (%zu samples)\n",
        static_cast<unsigned long long>(stats.core.records_succeeded),
        static_cast<unsigned long long>(stats.core.records_failed),
        static_cast<unsigned long long>(stats.core.batches_sealed), static_cast<unsigned long long>(stats.core.retries),
        static_cast<unsigned long long>(stats.core.gap_resends),
        static_cast<unsigned long long>(stats.session.connections_opened),
        static_cast<unsigned long long>(stats.session.stalls), static_cast<unsigned long long>(every),
        latencies.size());
    std::printf(
        "producer's submit-to-ack over %llu records: %.2f ms 50th, %.2f ms 90th, %.2f ms 99th, %.2f ms 99.9th, "
        "%.2f ms max\n",
        static_cast<unsigned long long>(own.count), ms(own.p50_ns), ms(own.p90_ns), ms(own.p99_ns), ms(own.p999_ns),
        ms(own.max_ns));
  }
  if (failure) {
    std::fprintf(stderr, "prodsm bench: %s\n", failure->describe().c_str());
    if (failure->code == ErrorCode::protocol_error && stats.core.first_attempt_duplicate_records > 0) {
      std::fprintf(stderr,
                   "prodsm bench: the producer id and epoch were used by an earlier run; nothing of this run was "
                   "appended (leave out --epoch for a fresh epoch)\n");
    }
    return kExitServerError;
  }
  if (stopped) {
    std::fprintf(stderr, "prodsm bench: interrupted after %llu records, which were flushed\n",
                 static_cast<unsigned long long>(sent));
    return kExitInterrupted;
  }
  return kExitOk;
}

/// `prodsm bench s2://BASIN/STREAM`: the same load through asio::S2Producer.
int run_bench_s2(const BenchOptions& o) {
  if (o.content_type_given) {
    std::fprintf(stderr, "prodsm bench: --content-type is not supported for s2:// targets\n");
    return kExitBadInput;
  }
  auto target = parse_s2_target(o.url);
  if (!target) {
    std::fprintf(stderr, "prodsm bench: %s\n", target.error().c_str());
    return kExitBadInput;
  }
  asio::S2ProducerOptions options;
  if (auto bad = apply_s2_flags(*target, o.s2, o.producer, o.identity_given, options)) {
    std::fprintf(stderr, "prodsm bench: %s\n", bad->c_str());
    return kExitBadInput;
  }
  if (o.record_bytes + 8 > o.producer.max_batch_bytes) {  // S2 meters 8 + body (B4)
    std::fprintf(stderr, "prodsm bench: --record-bytes %llu + 8 exceeds --max-batch-bytes %llu (B4)\n",
                 static_cast<unsigned long long>(o.record_bytes),
                 static_cast<unsigned long long>(o.producer.max_batch_bytes));
    return kExitBadInput;
  }
  set_interrupt_message(
      "prodsm bench: interrupted: no more records are submitted; waiting until every record already accepted is "
      "acknowledged (at most --delivery-timeout-ms); interrupt again to abort at once\n");
  IoRunner runner;
  auto producer = asio::S2Producer::create(runner.io.get_executor(), options);
  if (!producer) {
    std::fprintf(stderr, "prodsm bench: %s\n", in_flag_terms(producer.error()).c_str());
    return kExitBadInput;
  }
  if (o.create) {
    s2::RequestOptions request_options;
    request_options.access_token = options.access_token;
    request_options.extra_headers = options.extra_headers;
    auto request = s2::encode_create_stream(options.endpoint, options.stream, request_options);
    auto response = request ? producer->session()->async_exchange(std::move(*request), ::asio::use_future).get()
                            : asio::ExchangeResult(tl::unexpected(
                                  make_error(ErrorCode::rejected, Certainty::definite, false, request.error())));
    auto created =
        response ? s2::classify_create_stream(*response) : tl::expected<bool, Error>(tl::unexpected(response.error()));
    if (!created) {
      std::fprintf(stderr, "prodsm bench: creating %s failed: %s\n", o.url.c_str(), created.error().describe().c_str());
      return kExitServerError;
    }
  }
  return measure(*producer, o, bench_record(o.record_bytes));
}

int run_bench(const BenchOptions& o) {
  if (is_s2_target(o.url)) return run_bench_s2(o);
  asio::ProducerOptions options;
  options.url = o.url;
  options.content_type = o.content_type;
  if (auto bad = apply_producer_flags(o.producer, options)) {
    std::fprintf(stderr, "prodsm bench: %s\n", bad->c_str());
    return kExitBadInput;
  }
  if (ds::stores_json_messages(o.content_type)) {
    std::fprintf(stderr, "prodsm bench: --content-type '%s': bench writes bytes records, not JSON values\n",
                 o.content_type.c_str());
    return kExitBadInput;
  }
  const std::string record = bench_record(o.record_bytes);

  set_interrupt_message(
      "prodsm bench: interrupted: no more records are submitted; waiting until every record already accepted is "
      "acknowledged (at most --delivery-timeout-ms); interrupt again to abort at once\n");
  IoRunner runner;
  ::asio::io_context& io = runner.io;

  auto producer = asio::Producer::create(io.get_executor(), options);
  if (!producer) {
    std::fprintf(stderr, "prodsm bench: %s\n", in_flag_terms(producer.error()).c_str());
    return kExitBadInput;
  }
  if (o.record_bytes > o.producer.max_batch_bytes) {
    std::fprintf(stderr, "prodsm bench: --record-bytes %llu exceeds --max-batch-bytes %llu (B4)\n",
                 static_cast<unsigned long long>(o.record_bytes),
                 static_cast<unsigned long long>(o.producer.max_batch_bytes));
    return kExitBadInput;
  }

  if (o.create) {
    ds::RequestOptions request_options;
    request_options.extra_headers = options.extra_headers;
    auto r = asio::async_create_stream(producer->session(), producer->url(), options.content_type, {}, request_options,
                                       ::asio::use_future)
                 .get();
    if (!r) {
      std::fprintf(stderr, "prodsm bench: creating %s failed: %s\n", o.url.c_str(), r.error().describe().c_str());
      return kExitServerError;
    }
  }

  return measure(*producer, o, record);
}

}  // namespace

void add_bench_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Load-test a stream: N records of B bytes, throughput and submit-to-ack latency percentiles");
  cmd->add_option("url", o->url, "Stream URL, http://host[:port]/path, or an S2 stream s2://BASIN/STREAM")->required();
  add_decimal_option(*cmd, "-n,--records", o->records, 1, 1'000'000'000, "Records to produce, 1..1000000000");
  add_decimal_option(*cmd, "-s,--record-bytes", o->record_bytes, 1, 16ULL << 20,
                     "Bytes per record, 1..16777216 (and <= --max-batch-bytes)");
  cmd->add_option_function<std::string>(
         "--throughput",
         [o](const std::string& v) {
           auto rate = parse_decimal_number(v, 1e9);
           if (!rate) throw CLI::ValidationError("--throughput", rate.error());
           o->throughput = *rate;
         },
         "Pace to this many records/s, 0..1000000000 (0 = as fast as possible)")
      ->type_name("RATE")
      ->default_str("0");
  cmd->add_option("--content-type", o->content_type, "Stream content type (bytes mode)")->capture_default_str();
  cmd->add_flag("--create", o->create,
                "Create the stream first if it does not exist (PUT; s2:// targets: POST /v1/streams)");
  add_decimal_option(*cmd, "--report-interval-ms", o->report_interval_ms, 0, 3'600'000,
                     "Print a progress line to stderr this often (0 = never), 0..3600000");
  cmd->add_flag("--json", o->json, "Print the figures as one JSON object");
  add_producer_flags(*cmd, o->producer);
  add_s2_flags(*cmd, o->s2);
  cmd->footer(
      "Latency is per record, from submit to its acknowledgement (linger and queueing included), "
      "sampled on at most 500000 records and at most one in 64 (at least min(N, 1000)); the other records are "
      "submitted 64 at a time (submit_many) unless --throughput paces them. Client CPU is this process's user + "
      "system time per record. Exit status: 0 success; 2 bad usage; 3 server or network "
      "failure (also a reused --producer-id and --epoch: the first batch is answered as a duplicate and "
      "nothing is appended); 130 interrupted (SIGINT or SIGTERM: what was accepted is flushed and the "
      "figures printed; a second signal aborts at once, printing nothing). The figures are printed in every "
      "other case but bad usage.");
  cmd->callback([o, cmd, &run] {
    o->producer.epoch_given = cmd->count("--epoch") > 0;
    o->producer.max_in_flight_given = cmd->count("--max-in-flight") > 0;
    o->identity_given = cmd->count("--producer-id") + cmd->count("--epoch") + cmd->count("--auto-claim") > 0;
    o->content_type_given = cmd->count("--content-type") > 0;
    if (!is_s2_target(o->url)) {
      for (const char* flag : {"--endpoint", "--fencing-token", "--match-seq-num"}) {
        if (cmd->count(flag) > 0) throw CLI::ValidationError(std::string(flag) + ": only for s2:// targets");
      }
    }
    run = [o] { return run_bench(*o); };
  });
}

}  // namespace prodsm::tools
