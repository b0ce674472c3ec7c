// SPDX-License-Identifier: Apache-2.0
#include "produce_report.hpp"

#include <cstdio>
#include <string>

#include "commands.hpp"
#include "connection_flags.hpp"
#include "figures.hpp"
#include "input.hpp"
#include "interrupt.hpp"

namespace prodsm::tools {

int report_produce_end(ProduceEnd& end, const ProducerAdapterStats& stats) {
  const ProducerFlags& f = *end.producer;
  const bool verified = end.verified();
  if (f.no_producer_id && f.max_in_flight_given && f.max_in_flight > 1 && !verified) {
    // Plain appends pipelined: nothing orders them at the server. A server may apply
    // pipelined appends concurrently (the reference server does: a slow one lands after
    // later ones), and a batch resent (E4) lands after those sent behind it. Not an error
    // (every record is in), but the input order is not certain: say so, whether or not
    // anything was resent (before, only a resend was warned of).
    const std::string resent = stats.core.retries == 0
                                   ? std::string{}
                                   : ", and " + std::to_string(stats.core.retries) +
                                         " batch attempt(s) were resent, each landing after batches sent behind it";
    std::fprintf(stderr,
                 "prodsm produce: warning: plain appends with up to %u in flight (--no-producer-id --max-in-flight "
                 "%u): a server may apply pipelined appends out of order%s, so the stream may hold records out of "
                 "order; --verify checks, --max-in-flight 1 (the default without an id) or a producer id prevents "
                 "it\n",
                 f.max_in_flight, f.max_in_flight, resent.c_str());
  }
  if (!end.quiet) {
    const std::vector<double>& latencies = end.flush_latencies_ms;
    if (stats.core.records_failed > 0 || end.records != stats.core.records_succeeded) {
      // Accepted is not stored: say how many were acknowledged and how many failed, and
      // whether failed means "not in the stream" (E2: an indefinite failure may be).
      std::printf("records      %llu accepted: %llu acknowledged, %llu failed%s\n",
                  static_cast<unsigned long long>(end.records),
                  static_cast<unsigned long long>(stats.core.records_succeeded),
                  static_cast<unsigned long long>(stats.core.records_failed),
                  end.failure && end.failure->certainty == Certainty::indefinite
                      ? " (indefinite: some of them may be in the stream)"
                      : "");
    } else {
      std::printf("records      %llu\n", static_cast<unsigned long long>(end.records));
    }
    std::printf("bytes        %llu (%s)\n", static_cast<unsigned long long>(end.record_bytes),
                format_bytes(static_cast<double>(end.record_bytes)).c_str());
    std::printf("batches      %llu\n", static_cast<unsigned long long>(stats.core.batches_sealed));
    std::printf("duplicates   %llu records in %llu batches\n",
                static_cast<unsigned long long>(stats.core.duplicate_records),
                static_cast<unsigned long long>(stats.core.duplicates));
    std::printf("resends      %llu retries, %llu gap resends, %llu epoch claims\n",
                static_cast<unsigned long long>(stats.core.retries),
                static_cast<unsigned long long>(stats.core.gap_resends),
                static_cast<unsigned long long>(stats.core.epoch_claims));
    std::printf("transport    %llu connections, %llu transport failures, %llu stalled responses\n",
                static_cast<unsigned long long>(stats.session.connections_opened),
                static_cast<unsigned long long>(stats.session.transport_failures),
                static_cast<unsigned long long>(stats.session.stalls));
    std::printf("elapsed      %.3f s\n", end.elapsed_s);
    std::printf("throughput   %.0f records/s, %s/s\n",
                end.elapsed_s > 0 ? static_cast<double>(end.records) / end.elapsed_s : 0.0,
                format_bytes(end.elapsed_s > 0 ? static_cast<double>(end.record_bytes) / end.elapsed_s : 0.0).c_str());
    std::printf("flush        %zu flushes, latency p50 %.2f ms, p99 %.2f ms\n", latencies.size(),
                percentile(latencies, 50), percentile(latencies, 99));
    if (end.skipped_blank_lines > 0) {
      std::printf("skipped      %llu blank lines\n", static_cast<unsigned long long>(end.skipped_blank_lines));
    }
    if (end.closed_at) {
      std::printf("stream       closed at offset %s\n", end.closed_at->c_str());
    }
    if (verified) {
      std::printf("verified     the stream holds exactly the %llu records, in order\n",
                  static_cast<unsigned long long>(end.input_records));  // the resumed ones too
    }
  }
  if (end.resumed_skipped && !end.quiet) {
    std::printf("resumed      %llu records were already in the stream and were skipped\n",
                static_cast<unsigned long long>(*end.resumed_skipped));
  }
  report_dropped_partial_line(end.dropped_partial_bytes);
  if (!end.quiet) report_unterminated_last_line("prodsm produce", end.unterminated_line, end.bytes_mode);
  if (const auto& c = end.completed_line) {
    std::fprintf(
        stderr,
        "prodsm produce: --resume: the stream ended inside input line %llu, holding its first %llu bytes (a "
        "run whose input was cut off mid-line); its other %llu bytes were sent as a record, so the stream holds "
        "the input's bytes once it is acknowledged\n",
        static_cast<unsigned long long>(c->line), static_cast<unsigned long long>(c->held_bytes),
        static_cast<unsigned long long>(c->sent_bytes));
  }
  if (end.resume_problem) {
    std::fprintf(stderr, "prodsm produce: --resume: %s; %llu records were appended before this was found\n",
                 end.resume_problem->c_str(), static_cast<unsigned long long>(end.records));
    return end.records == 0 ? kExitBadInput : kExitServerError;
  }
  if (end.bad_line) {
    if (end.failure) {
      std::fprintf(stderr,
                   "prodsm produce: line %llu: %s (stopped before sending it); the %llu records before it were not "
                   "all stored: %s\n",
                   static_cast<unsigned long long>(end.bad_line->line), end.bad_line->message.c_str(),
                   static_cast<unsigned long long>(end.records), end.failure->describe().c_str());
      return kExitServerError;
    }
    std::fprintf(stderr,
                 "prodsm produce: line %llu: %s (stopped before sending it; the %llu records before it were flushed)\n",
                 static_cast<unsigned long long>(end.bad_line->line), end.bad_line->message.c_str(),
                 static_cast<unsigned long long>(end.records));
    return kExitBadInput;
  }
  if (end.failure) {
    name_retry_flags(*end.failure, f);
    std::fprintf(stderr, "prodsm produce: %s\n", end.failure->describe().c_str());
    if (stats.core.records_succeeded == 0) {  // nothing was ever answered
      if (const auto hint = plain_http_at_tls_port_hint(end.url, *end.failure); !hint.empty()) {
        std::fprintf(stderr, "prodsm produce: %s\n", hint.c_str());
      }
    }
    if (end.failure->certainty == Certainty::indefinite && end.records > stats.core.records_succeeded) {
      // E2: sent, outcome unknown. Sending the unacknowledged tail again could double it;
      // --resume reads what the stream holds and appends exactly the rest, and the same
      // producer id fences this run's requests still on their way (S3).
      const std::string again =
          end.producer_id.empty() ? "--resume --verify" : "--producer-id " + end.producer_id + " --resume --verify";
      std::fprintf(stderr,
                   "prodsm produce: %llu accepted records were not acknowledged and some of them may be in the "
                   "stream; do not send them again as they are: run again with %s to append exactly what the "
                   "stream lacks\n",
                   static_cast<unsigned long long>(end.records - stats.core.records_succeeded), again.c_str());
    }
    if (end.failure->code == ErrorCode::protocol_error && stats.core.first_attempt_duplicate_records > 0) {
      std::fprintf(stderr, "%s",
                   f.epoch_given
                       ? "prodsm produce: the producer id and epoch were used by an earlier run; nothing of this run "
                         "was appended. Leave out --epoch for a fresh epoch, or use --resume to append what the "
                         "stream lacks\n"
                       : "prodsm produce: the server answered a fresh producer epoch as a duplicate, which an honest "
                         "server cannot do; nothing of this batch was appended\n");
    }
    if (end.failure->code == ErrorCode::not_found) {
      // A 404 (or 410) names no URL of its own: say which stream, and the way out.
      std::fprintf(stderr, "prodsm produce: there is no stream at %s%s\n", end.url.c_str(),
                   end.create ? " any more (this run created it or found it; it was deleted or expired since)"
                              : ": create it with --create, or check the URL's path");
    }
    if (end.failure->code == ErrorCode::stale_epoch && !f.auto_claim) {
      // S5: fenced. A later run of the id, or an earlier one whose epoch is above this run's
      // fresh one (a clock ahead of this host's, or a larger --epoch) — say which way out there is.
      std::fprintf(stderr,
                   "prodsm produce: the server holds a higher epoch for this producer id: a run of it that started "
                   "later fenced this one, or an earlier run used a larger epoch (its clock ahead of this host's, or "
                   "a larger --epoch). If no other run of it is live, --auto-claim takes the next epoch instead of "
                   "failing\n");
    }
    return end.aborted ? kExitInterrupted : kExitServerError;
  }
  if (end.interrupted) {
    std::fprintf(stderr, "prodsm produce: interrupted: stopped reading after %llu records, which were flushed%s\n",
                 static_cast<unsigned long long>(end.records), end.close_stream ? " (the stream was not closed)" : "");
    return kExitInterrupted;
  }
  if (end.verify_problem) {
    if (abort_requested() || end.verify_problem->interrupted) {
      std::fprintf(stderr, "prodsm produce: %s; every record was acknowledged\n", end.verify_problem->message.c_str());
      return kExitInterrupted;
    }
    if (end.verify_problem->unread) {  // nothing compared: a server or network failure, not a mismatch
      std::fprintf(stderr, "prodsm produce: not verified: %s; every record was acknowledged\n",
                   end.verify_problem->message.c_str());
      return kExitServerError;
    }
    std::fprintf(stderr, "prodsm produce: verification failed: %s\n", end.verify_problem->message.c_str());
    return kExitFailure;
  }
  if (!end.quiet && stdout_closed_at_start()) {  // as `read` does: exit 4 is "the summary could not be written"
    std::fprintf(stderr,
                 "prodsm produce: stdout is closed (>&-): the summary was not written (-q asks for none); "
                 "every record was acknowledged\n");
    return kExitOutputFailed;
  }
  return kExitOk;
}

}  // namespace prodsm::tools
