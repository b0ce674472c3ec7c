// SPDX-License-Identifier: Apache-2.0
// `prodsm produce URL`: one record per input line into a Durable Streams stream, through
// the Asio producer; flushes at the end and prints a summary.
#include <fcntl.h>
#include <unistd.h>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <pthread.h>
#include <algorithm>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "commands.hpp"
#include "figures.hpp"
#include "input.hpp"
#include "interrupt.hpp"
#include "interruptible_waits.hpp"
#include "io_runner.hpp"
#include "numeric_flags.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "produce_s2.hpp"
#include "producer_flags.hpp"
#include "progress.hpp"
#include "record_reader.hpp"
#include "resume.hpp"
#include "retry_notices.hpp"
#include "stream_read.hpp"
#include "verify.hpp"

namespace prodsm::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct ProduceOptions {
  std::string url;
  std::string input = "-";
  std::string content_type = "application/octet-stream";
  bool content_type_given = false;
  bool json = false;
  bool create = false;
  ProducerFlags producer;
  std::uint64_t flush_every = 0;
  bool close_stream = false;
  std::string progress = "auto";
  bool verify = false;
  bool resume = false;
  bool quiet = false;
  S2Flags s2;  ///< s2:// targets only
};

int run_produce(const ProduceOptions& o) {
  // ---- configuration --------------------------------------------------------------------
  asio::ProducerOptions options;
  options.url = o.url;
  // JSON mode only where the server keeps JSON messages (application/json): a `+json`
  // stream is stored as sent, so it is produced as bytes, line by line, like any other.
  if (o.json && o.content_type_given && !ds::stores_json_messages(o.content_type)) {
    std::fprintf(stderr,
                 "prodsm produce: --json conflicts with --content-type '%s' (JSON mode is application/json: the "
                 "server stores any other type, +json ones too, as bytes)\n",
                 o.content_type.c_str());
    return kExitBadInput;
  }
  options.content_type = o.json && !o.content_type_given ? "application/json" : o.content_type;
  const bool json_mode = o.json || ds::stores_json_messages(o.content_type);
  options.producer.protocol.body_format =
      json_mode ? DurableStreamsPolicy::BodyFormat::json : DurableStreamsPolicy::BodyFormat::bytes;
  options.producer.protocol.validate_json = false;  // the record reader validates each line first
  if (auto bad = apply_producer_flags(o.producer, options)) {
    std::fprintf(stderr, "prodsm produce: %s\n", bad->c_str());
    return kExitBadInput;
  }
  options.events = retry_notices("prodsm produce", o.quiet);

  // ---- input ----------------------------------------------------------------------------
  Input input;
  if (auto opened = open_input(o.input, input); !opened) {
    std::fprintf(stderr, "prodsm produce: %s\n", opened.error().c_str());
    return kExitBadInput;
  }
  std::ifstream& file = input.file;
  std::istream* in = input.stream;
  const std::uint64_t total_bytes = input.total_bytes;
  std::vector<char> stream_buffer(1 << 20);
  in->rdbuf()->pubsetbuf(stream_buffer.data(), static_cast<std::streamsize>(stream_buffer.size()));
  RecordReader reader = input_records(input, json_mode ? RecordReader::Mode::json : RecordReader::Mode::bytes,
                                      json_mode ? o.producer.max_batch_bytes - 1 : o.producer.max_batch_bytes);

  // ---- producer -------------------------------------------------------------------------
  set_interrupt_message(kProduceInterruptMessage);
  abort_on_second_interrupt(kProduceAbortMessage);
  // Ends a read of stdin that the signal would miss (without /dev/null the race remains).
  (void)stop_stdin_on_interrupt();
  IoRunner runner;
  ::asio::io_context& io = runner.io;

  auto producer = asio::Producer::create(io.get_executor(), options);
  if (!producer) {
    std::fprintf(stderr, "prodsm produce: %s\n", producer.error().c_str());
    return kExitBadInput;
  }
  ds::RequestOptions request_options;
  request_options.extra_headers = options.extra_headers;
  bool created = false;
  if (o.create) {
    auto r = asio::async_create_stream(producer->session(), producer->url(), options.content_type, {}, request_options,
                                       ::asio::use_future)
                 .get();
    if (!r) {
      std::fprintf(stderr, "prodsm produce: creating %s failed: %s\n", o.url.c_str(), r.error().describe().c_str());
      return kExitServerError;
    }
    created = r->created;
  }

  // --resume: the stream's contents must be a prefix of the input, record for record;
  // those records are skipped, the rest is produced (under a fresh epoch).
  std::optional<StreamPrefix> prefix;
  if (o.resume) {
    auto p = StreamPrefix::create(json_mode);
    if (!p) {
      std::fprintf(stderr, "prodsm produce: --resume: %s; nothing was appended\n", p.error().c_str());
      return kExitOutputFailed;
    }
    // Streamed into the spool (resume.hpp): bounded memory whatever the stream's size.
    CliReadResult r = run_cli_read(
        producer->session(), producer->url(), whole_stream_read(json_mode, request_options),
        [&p, json_mode](const ds::ReadChunk& c) {
          if (c.next_offset) return true;
          return json_mode ? p->add_value(c.data) : p->add_bytes(c.data);
        },
        true);  // an interrupt ends the read at once (its session is the producer's)
    if (r.interrupted) {
      std::fprintf(stderr, "prodsm produce: --resume: interrupted while reading the stream; nothing was appended\n");
      return kExitInterrupted;
    }
    if (p->error()) {
      std::fprintf(stderr, "prodsm produce: --resume: %s; nothing was appended\n", p->error()->c_str());
      return kExitOutputFailed;
    }
    if (!r.outcome) {
      std::fprintf(stderr, "prodsm produce: --resume: reading the stream failed: %s\n",
                   r.outcome.error().describe().c_str());
      return kExitServerError;
    }
    if (auto ready = p->finish_spool(); !ready) {
      std::fprintf(stderr, "prodsm produce: --resume: %s; nothing was appended\n", ready.error().c_str());
      return kExitOutputFailed;
    }
    prefix.emplace(std::move(*p));
  }

  const bool show_progress = !o.quiet && (o.progress == "always" || (o.progress == "auto" && ::isatty(2)));
  Progress progress(show_progress, total_bytes);
  // Kept only for --verify when the input cannot be read again (stdin, a pipe): every
  // input record, skipped ones included. A regular file is read again instead.
  std::vector<std::string> produced;
  const bool keep_produced = o.verify && total_bytes == 0 && !file.is_open();
  std::uint64_t input_records = 0;  // records read from the input, skipped ones included
  std::uint64_t records = 0;
  std::uint64_t record_bytes = 0;
  std::optional<LineError> bad_line;
  std::optional<Error> failure;
  const auto started = Clock::now();

  // Submits, flushes and closes that interrupts can end (interruptible_waits.hpp).
  ProduceWaits waits(*producer, records, o.quiet);

  bool interrupted = false;
  std::optional<std::string> resume_problem;
  while (true) {
    if (tools::interrupted()) {
      interrupted = true;
      break;
    }
    auto next = reader.next();
    if (!next) {
      if (tools::interrupted()) {  // the read was interrupted, not bad
        interrupted = true;
        break;
      }
      bad_line = next.error();
      break;
    }
    if (!*next) {  // end of input, or stdin's read ended by the signal (InterruptibleStdin)
      interrupted = tools::interrupted();
      break;
    }
    const std::string_view record = **next;
    if (prefix) {
      auto held = prefix->holds(record, reader.line());
      if (!held) {
        resume_problem = held.error();
        break;
      }
      if (*held) {  // the stream holds it already
        if (keep_produced) produced.emplace_back(record);
        ++input_records;
        continue;
      }
    }
    auto submitted = waits.submit(record, std::chrono::milliseconds{o.producer.delivery_timeout_ms});
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
    ++input_records;
    record_bytes += record.size();
    if (keep_produced) produced.emplace_back(record);
    if (o.flush_every > 0 && records % o.flush_every == 0) waits.flush(false);
    if ((records & 1023) == 0) progress.update(records, reader.bytes_read());
  }
  progress.update(records, reader.bytes_read(), true);
  if (prefix && !resume_problem && !bad_line && !interrupted) resume_problem = prefix->at_end();
  if (!interrupted) announce_input_read(!failure && !bad_line && !resume_problem);

  // Everything accepted is flushed, whatever stopped the input (nothing is lost).
  if (auto e = waits.flush(true); e && !failure) failure = e;
  std::optional<asio::CloseStreamResult> closed_stream;
  if (o.close_stream && !failure && !bad_line && !interrupted && !resume_problem) {
    closed_stream = waits.wait(producer->async_close_stream(::asio::use_future));
    if (!*closed_stream) failure = closed_stream->error();
  }
  auto close_result = waits.wait(producer->async_close(::asio::use_future));
  if (!close_result && !failure) failure = close_result.error();
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  progress.finish();

  // ---- verification -----------------------------------------------------------------------
  std::optional<VerifyProblem> verify_problem;
  if (o.verify && !failure && !bad_line && !interrupted && !resume_problem && !waits.aborted()) {
    if (!created && o.create && !o.resume) {
      verify_problem = VerifyProblem{"the stream existed before this run; --verify needs a new stream (or --resume)"};
    } else {
      asio::SessionOptions verify_session = options.session;     // the run's TLS ...
      verify_session.header_provider = options.header_provider;  // ... and per-request headers
      verify_problem =
          verify_stream(producer->url(), io, verify_session, request_options, json_mode,
                        file.is_open() ? o.input : std::string{}, o.producer.max_batch_bytes, input_records, produced);
      // A stream that held data before: the likely cause of a difference, which only --create rules out.
      if (verify_problem && !verify_problem->unread && !o.create && !o.resume) {
        verify_problem->message +=
            " (--verify compares the whole stream with the input: a stream that held data before "
            "this run differs; verify a new stream, --create, or use --resume)";
      }
    }
  }

  // ---- summary --------------------------------------------------------------------------
  const auto stats = producer->stats();
  const bool verified = o.verify && !verify_problem && !failure && !bad_line && !interrupted && !resume_problem;
  if (o.producer.no_producer_id && o.producer.max_in_flight_given && o.producer.max_in_flight > 1 && !verified) {
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
                 o.producer.max_in_flight, o.producer.max_in_flight, resent.c_str());
  }
  if (!o.quiet) {
    const std::vector<double> latencies = waits.flush_latencies_ms();
    if (stats.core.records_failed > 0 || records != stats.core.records_succeeded) {
      // Accepted is not stored: say how many were acknowledged and how many failed, and
      // whether failed means "not in the stream" (E2: an indefinite failure may be).
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
    std::printf("elapsed      %.3f s\n", elapsed);
    std::printf("throughput   %.0f records/s, %s/s\n", elapsed > 0 ? static_cast<double>(records) / elapsed : 0.0,
                format_bytes(elapsed > 0 ? static_cast<double>(record_bytes) / elapsed : 0.0).c_str());
    std::printf("flush        %zu flushes, latency p50 %.2f ms, p99 %.2f ms\n", latencies.size(),
                percentile(latencies, 50), percentile(latencies, 99));
    if (reader.skipped_blank_lines() > 0) {
      std::printf("skipped      %llu blank lines\n", static_cast<unsigned long long>(reader.skipped_blank_lines()));
    }
    if (closed_stream && *closed_stream) {
      std::printf("stream       closed at offset %s\n", (*closed_stream)->final_offset.c_str());
    }
    if (verified) {
      std::printf("verified     the stream holds exactly the %llu records, in order\n",
                  static_cast<unsigned long long>(input_records));  // the resumed ones too
    }
  }
  if (prefix && !o.quiet) {
    std::printf("resumed      %llu records were already in the stream and were skipped\n",
                static_cast<unsigned long long>(prefix->skipped()));
  }
  report_dropped_partial_line(reader.dropped_partial_bytes());
  if (resume_problem) {
    std::fprintf(stderr, "prodsm produce: --resume: %s; %llu records were appended before this was found\n",
                 resume_problem->c_str(), static_cast<unsigned long long>(records));
    return records == 0 ? kExitBadInput : kExitServerError;
  }
  if (bad_line) {
    if (failure) {
      std::fprintf(stderr,
                   "prodsm produce: line %llu: %s (stopped before sending it); the %llu records before it were not "
                   "all stored: %s\n",
                   static_cast<unsigned long long>(bad_line->line), bad_line->message.c_str(),
                   static_cast<unsigned long long>(records), failure->describe().c_str());
      return kExitServerError;
    }
    std::fprintf(stderr,
                 "prodsm produce: line %llu: %s (stopped before sending it; the %llu records before it were flushed)\n",
                 static_cast<unsigned long long>(bad_line->line), bad_line->message.c_str(),
                 static_cast<unsigned long long>(records));
    return kExitBadInput;
  }
  if (failure) {
    name_retry_flags(*failure, o.producer);
    std::fprintf(stderr, "prodsm produce: %s\n", failure->describe().c_str());
    if (failure->certainty == Certainty::indefinite && records > stats.core.records_succeeded) {
      // E2: sent, outcome unknown. Sending the unacknowledged tail again could double it;
      // --resume reads what the stream holds and appends exactly the rest, and the same
      // producer id fences this run's requests still on their way (S3).
      const auto& idempotent = options.producer.protocol.idempotent;
      const std::string again =
          idempotent ? "--producer-id " + idempotent->producer_id + " --resume --verify" : "--resume --verify";
      std::fprintf(stderr,
                   "prodsm produce: %llu accepted records were not acknowledged and some of them may be in the "
                   "stream; do not send them again as they are: run again with %s to append exactly what the "
                   "stream lacks\n",
                   static_cast<unsigned long long>(records - stats.core.records_succeeded), again.c_str());
    }
    if (failure->code == ErrorCode::protocol_error && stats.core.first_attempt_duplicate_records > 0) {
      std::fprintf(stderr, "%s",
                   o.producer.epoch_given
                       ? "prodsm produce: the producer id and epoch were used by an earlier run; nothing of this run "
                         "was appended. Leave out --epoch for a fresh epoch, or use --resume to append what the "
                         "stream lacks\n"
                       : "prodsm produce: the server answered a fresh producer epoch as a duplicate, which an honest "
                         "server cannot do; nothing of this batch was appended\n");
    }
    if (failure->code == ErrorCode::stale_epoch && !o.producer.auto_claim) {
      // S5: fenced. A later run of the id, or an earlier one whose epoch is above this run's
      // fresh one (a clock ahead of this host's, or a larger --epoch) — say which way out there is.
      std::fprintf(stderr,
                   "prodsm produce: the server holds a higher epoch for this producer id: a run of it that started "
                   "later fenced this one, or an earlier run used a larger epoch (its clock ahead of this host's, or "
                   "a larger --epoch). If no other run of it is live, --auto-claim takes the next epoch instead of "
                   "failing\n");
    }
    return waits.aborted() ? kExitInterrupted : kExitServerError;
  }
  if (interrupted) {
    std::fprintf(stderr, "prodsm produce: interrupted: stopped reading after %llu records, which were flushed%s\n",
                 static_cast<unsigned long long>(records), o.close_stream ? " (the stream was not closed)" : "");
    return kExitInterrupted;
  }
  if (verify_problem) {
    if (abort_requested()) {
      std::fprintf(stderr, "prodsm produce: %s; every record was acknowledged\n", verify_problem->message.c_str());
      return kExitInterrupted;
    }
    if (verify_problem->unread) {  // nothing compared: a server or network failure, not a mismatch
      std::fprintf(stderr, "prodsm produce: not verified: %s; every record was acknowledged\n",
                   verify_problem->message.c_str());
      return kExitServerError;
    }
    std::fprintf(stderr, "prodsm produce: verification failed: %s\n", verify_problem->message.c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_produce_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ProduceOptions>();
  CLI::App* cmd = app.add_subcommand("produce", "Produce one record per input line to a stream");
  cmd->add_option("url", o->url, "Stream URL, http://host[:port]/path, or an S2 stream s2://BASIN/STREAM")->required();
  cmd->add_option("-i,--input", o->input, "Input file ('-' = stdin)")->capture_default_str();
  cmd->add_option("--content-type", o->content_type, "Stream content type")->capture_default_str();
  cmd->add_flag("--json", o->json, "JSON mode: content type application/json, one JSON value per line");
  cmd->add_flag("--create", o->create,
                "Create the stream first if it does not exist (PUT; s2:// targets: POST /v1/streams)");
  add_producer_flags(*cmd, o->producer);
  add_decimal_option(*cmd, "--flush-every", o->flush_every, 0, UINT64_MAX,
                     "Flush after every N records (0 = only at the end)");
  cmd->add_flag("--close-stream", o->close_stream, "Close the stream after the last record");
  cmd->add_option("--progress", o->progress, "auto (when stderr is a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_flag("--verify", o->verify, "Read the stream back and compare it with the input");
  cmd->add_flag("--resume", o->resume,
                "Append what the stream lacks: its contents must be a prefix of the input, record for record "
                "(else nothing is appended, exit 2); those records are skipped, the rest produced")
      ->excludes("--epoch");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary, no progress");
  add_s2_flags(*cmd, o->s2);
  cmd->footer(
      "Exit status: 0 success; 1 verification failed; 2 bad input (usage, unreadable file, invalid "
      "line: reported with its number, nothing after it is sent, everything before it is flushed); "
      "3 server or network failure; 4 writing the summary or the --resume spool failed; 130 interrupted "
      "(SIGINT, SIGTERM or SIGHUP: input stops, everything accepted is flushed; a second signal aborts: records not "
      "yet "
      "acknowledged fail, and the summary says how many were acknowledged; a third kills at once. A signal that "
      "repeats the first, from the same sender within 1 s as timeout(1) sends it, is not a second one).");
  cmd->callback([o, cmd, &run] {
    o->content_type_given = cmd->count("--content-type") > 0;
    o->producer.epoch_given = cmd->count("--epoch") > 0;
    o->producer.max_in_flight_given = cmd->count("--max-in-flight") > 0;
    if (is_s2_target(o->url)) {
      S2ProduceArgs a;
      a.target = o->url;
      a.input = o->input;
      a.create = o->create;
      a.flush_every = o->flush_every;
      a.quiet = o->quiet;
      a.producer = o->producer;
      a.s2 = o->s2;
      a.identity_given = cmd->count("--producer-id") + cmd->count("--epoch") + cmd->count("--auto-claim") > 0;
      for (const char* flag : {"--json", "--content-type", "--close-stream", "--verify", "--resume"}) {
        if (cmd->count(flag) > 0 && a.unsupported.empty()) a.unsupported = flag;
      }
      run = [a = std::move(a)] { return run_produce_s2(a); };
      return;
    }
    for (const char* flag : {"--endpoint", "--fencing-token", "--match-seq-num"}) {
      if (cmd->count(flag) > 0) throw CLI::ValidationError(std::string(flag) + ": only for s2:// targets");
    }
    run = [o] { return run_produce(*o); };
  });
}

}  // namespace prodsm::tools
