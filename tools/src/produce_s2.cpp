// SPDX-License-Identifier: Apache-2.0
// `prodsm produce s2://BASIN/STREAM` (see produce_s2.hpp).
#include "produce_s2.hpp"

#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "figures.hpp"
#include "input.hpp"
#include "interrupt.hpp"
#include "interruptible_waits.hpp"
#include "io_runner.hpp"
#include "record_reader.hpp"
#include "retry_notices.hpp"
#include "retry_request.hpp"

namespace prodsm::tools {
namespace {

using Clock = std::chrono::steady_clock;

/// Creates the stream (exists already: fine). The error, or nothing.
std::optional<Error> create_stream(const asio::S2Producer& producer) {
  const auto& o = producer.options();
  s2::RequestOptions request_options;
  request_options.access_token = o.access_token;
  request_options.extra_headers = o.extra_headers;
  auto request = s2::encode_create_stream(o.endpoint, o.stream, request_options);
  if (!request) return make_error(ErrorCode::rejected, Certainty::definite, false, request.error());
  auto response = producer.session()->async_exchange(std::move(*request), ::asio::use_future).get();
  if (!response) return response.error();
  auto created = s2::classify_create_stream(*response);
  if (!created) return created.error();
  return std::nullopt;
}

}  // namespace

int run_produce_s2(const S2ProduceArgs& a) {
  if (!a.unsupported.empty()) {
    std::fprintf(stderr, "prodsm produce: %s is not supported for s2:// targets\n", a.unsupported.c_str());
    return kExitBadInput;
  }
  auto target = parse_s2_target(a.target);
  if (!target) {
    std::fprintf(stderr, "prodsm produce: %s\n", target.error().c_str());
    return kExitBadInput;
  }
  asio::S2ProducerOptions options;
  if (auto bad = apply_s2_flags(*target, a.s2, a.producer, a.identity_given, options)) {
    std::fprintf(stderr, "prodsm produce: %s\n", bad->c_str());
    return kExitBadInput;
  }
  options.events = retry_notices("prodsm produce", a.quiet);

  Input input;  // a FIFO or pipe becomes stdin, so Ctrl-C stops the input at once (input.hpp)
  if (auto opened = open_input(a.input, input); !opened) {
    std::fprintf(stderr, "prodsm produce: %s\n", opened.error().c_str());
    return kExitBadInput;
  }
  // S2 meters a record without headers as 8 bytes + its body (S2Policy::metered_bytes);
  // the line's '\n' is not part of the record (Mode::lines).
  RecordReader reader = input_records(input, RecordReader::Mode::lines, a.producer.max_batch_bytes - 8);

  set_interrupt_message(kProduceInterruptMessage);
  abort_on_second_interrupt(kProduceAbortMessage);
  // Ends a read of stdin that the signal would miss (without /dev/null the race remains).
  (void)stop_stdin_on_interrupt();
  IoRunner runner;
  ::asio::io_context& io = runner.io;

  auto producer = asio::S2Producer::create(io.get_executor(), options);
  if (!producer) {
    std::fprintf(stderr, "prodsm produce: %s\n", in_flag_terms(producer.error()).c_str());
    return kExitBadInput;
  }
  if (a.create) {
    auto r = retry_request<bool>(
        [&]() -> tl::expected<bool, Error> {
          if (auto e = create_stream(*producer)) return tl::unexpected(*e);
          return true;
        },
        RetryBounds{a.producer.max_attempts, std::chrono::milliseconds{a.producer.delivery_timeout_ms}, a.quiet});
    if (!r) return report_create_failure(a.target, r.error());
  }

  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  // Submits, flushes and closes that interrupts can end (interruptible_waits.hpp).
  ProduceWaits waits(*producer, records, a.quiet);

  std::optional<LineError> bad_line;
  std::optional<Error> failure;
  bool interrupted = false;
  const auto started = Clock::now();
  while (true) {
    if (tools::interrupted()) {
      interrupted = true;
      break;
    }
    auto next = reader.next();
    if (!next) {
      interrupted = tools::interrupted();
      if (!interrupted) bad_line = next.error();
      break;
    }
    if (!*next) {
      interrupted = tools::interrupted();
      break;
    }
    const std::string_view record = **next;  // one line without its '\n' (Mode::lines)
    auto submitted = waits.submit(record, std::chrono::milliseconds{a.producer.delivery_timeout_ms});
    if (!submitted) {  // the interrupt came while it waited for capacity: not accepted
      interrupted = true;
      break;
    }
    auto& r = *submitted;
    if (!r) {
      if (r.error().reason == RejectReason::failed && r.error().terminal) {
        failure = *r.error().terminal;
      } else if (r.error().reason == RejectReason::invalid_record ||
                 r.error().reason == RejectReason::record_too_large) {
        bad_line = LineError{reader.line(), std::string(r.error().detail)};
      } else {
        failure = make_error(ErrorCode::would_block, Certainty::definite, false, std::string(r.error().detail));
      }
      break;
    }
    ++records;
    record_bytes += record.size();
    if (a.flush_every > 0 && records % a.flush_every == 0) waits.flush(false);
  }
  if (!interrupted) announce_input_read(!failure && !bad_line);
  // Everything accepted is flushed, whatever stopped the input (nothing is lost).
  if (auto e = waits.flush(true); e && !failure) failure = e;
  auto close_result = waits.wait(producer->async_close(::asio::use_future));
  if (!close_result && !failure) failure = close_result.error();
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();

  const auto stats = producer->stats();
  if (!a.quiet) {
    const std::vector<double> latencies = waits.flush_latencies_ms();
    if (stats.core.records_failed > 0 || records != stats.core.records_succeeded) {
      std::printf(
          "records      %llu accepted: %llu acknowledged, %llu failed%s\n", static_cast<unsigned long long>(records),
          static_cast<unsigned long long>(stats.core.records_succeeded),
          static_cast<unsigned long long>(stats.core.records_failed),
          failure && failure->certainty == Certainty::indefinite ? " (indefinite: some of them may be in the stream)"
                                                                 : "");
    } else {
      std::printf("records      %llu\n", static_cast<unsigned long long>(records));
    }
    std::printf("bytes        %llu (%s)\n", static_cast<unsigned long long>(record_bytes),
                format_bytes(static_cast<double>(record_bytes)).c_str());
    std::printf("batches      %llu\n", static_cast<unsigned long long>(stats.core.batches_sealed));
    std::printf("resends      %llu retries\n", static_cast<unsigned long long>(stats.core.retries));
    std::printf("transport    %llu connections, %llu transport failures\n",
                static_cast<unsigned long long>(stats.session.connections_opened),
                static_cast<unsigned long long>(stats.session.transport_failures));
    std::printf("elapsed      %.3f s\n", elapsed);
    std::printf("throughput   %.0f records/s, %s/s\n", elapsed > 0 ? static_cast<double>(records) / elapsed : 0.0,
                format_bytes(elapsed > 0 ? static_cast<double>(record_bytes) / elapsed : 0.0).c_str());
    std::printf("flush        %zu flushes, latency p50 %.2f ms, p99 %.2f ms\n", latencies.size(),
                percentile(latencies, 50), percentile(latencies, 99));
  }
  report_dropped_partial_line(reader.dropped_partial_bytes());
  if (!a.quiet) report_unterminated_last_line("prodsm produce", reader.unterminated_line(), false);
  if (bad_line) {
    std::fprintf(stderr, "prodsm produce: line %llu: %s (stopped before sending it; the %llu records before it %s)\n",
                 static_cast<unsigned long long>(bad_line->line), bad_line->message.c_str(),
                 static_cast<unsigned long long>(records),
                 failure ? ("were not all stored: " + failure->describe()).c_str() : "were flushed");
    return failure ? kExitServerError : kExitBadInput;
  }
  if (failure) {
    name_retry_flags(*failure, a.producer);
    std::fprintf(stderr, "prodsm produce: %s\n", failure->describe().c_str());
    return waits.aborted() ? kExitInterrupted : kExitServerError;
  }
  if (interrupted) {
    std::fprintf(stderr, "prodsm produce: interrupted: stopped reading after %llu records, which were flushed\n",
                 static_cast<unsigned long long>(records));
    return kExitInterrupted;
  }
  return kExitOk;
}

}  // namespace prodsm::tools
