// SPDX-License-Identifier: Apache-2.0
// `prodsm produce URL`: one record per input line into a Durable Streams stream, through
// the Asio producer; flushes at the end, verifies when asked, and hands what happened to
// produce_report.cpp (the summary and the exit status).
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "input.hpp"
#include "interrupt.hpp"
#include "interruptible_waits.hpp"
#include "io_runner.hpp"
#include "numeric_flags.hpp"
#include "prodsm/asio/producer.hpp"
#include "prodsm/asio/stream_ops.hpp"
#include "produce_report.hpp"
#include "produce_s2.hpp"
#include "producer_flags.hpp"
#include "progress.hpp"
#include "record_reader.hpp"
#include "resume.hpp"
#include "retry_notices.hpp"
#include "retry_request.hpp"
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
    std::fprintf(stderr, "prodsm produce: %s\n", in_flag_terms(producer.error()).c_str());
    return kExitBadInput;
  }
  ds::RequestOptions request_options;
  request_options.extra_headers = options.extra_headers;
  // How --resume and --verify read the stream back: the run's mode, headers and retry bounds.
  const ds::ReadOptions read_back = whole_stream_read(json_mode, request_options, o.producer.max_attempts,
                                                      std::chrono::milliseconds{o.producer.delivery_timeout_ms});
  const asio::ReadRetryHandler read_back_retries =
      read_retry_notices("prodsm produce", "reading the stream back", o.quiet);
  bool created = false;
  if (o.create) {
    bool maybe_ours = false;  // an attempt that failed indefinite may have created it
    auto r = retry_request<ds::CreateResult>(
        [&] {
          return asio::async_create_stream(producer->session(), producer->url(), options.content_type, {},
                                           request_options, ::asio::use_future)
              .get();
        },
        RetryBounds{o.producer.max_attempts, std::chrono::milliseconds{o.producer.delivery_timeout_ms}, o.quiet},
        &maybe_ours);
    if (!r) return report_create_failure(o.url, r.error());
    created = r->created || maybe_ours;  // --verify then compares the whole stream with the input
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
        producer->session(), producer->url(), read_back,
        [&p, json_mode](const ds::ReadChunk& c) {
          if (c.next_offset) return true;
          return json_mode ? p->add_value(c.data) : p->add_bytes(c.data);
        },
        true,  // an interrupt ends the read at once (its session is the producer's)
        read_back_retries);
    if (r.interrupted) {
      std::fprintf(stderr, "prodsm produce: --resume: interrupted while reading the stream; nothing was appended\n");
      return kExitInterrupted;
    }
    if (p->error()) {
      std::fprintf(stderr, "prodsm produce: --resume: %s; nothing was appended\n", p->error()->c_str());
      return kExitOutputFailed;
    }
    if (!r.outcome) {
      if (r.outcome.error().failure == ds::ReadFailure::not_json) {  // the operator's mode, not the server
        std::fprintf(stderr, "prodsm produce: --resume: %s: produce to it without --json; nothing was appended\n",
                     r.outcome.error().describe().c_str());
        return kExitBadInput;
      }
      std::fprintf(stderr, "prodsm produce: --resume: reading the stream failed: %s\n",
                   r.outcome.error().describe().c_str());
      if (r.outcome.error().code == ErrorCode::not_found) {  // as a 404 on append: which stream, the way out
        std::fprintf(stderr,
                     "prodsm produce: --resume: there is no stream at %s: add --create to start it (a created "
                     "stream is resumed from its start), or check the URL's path; nothing was appended\n",
                     o.url.c_str());
      }
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
  // What the run did, filled in as it goes; reported at the end (produce_report.cpp).
  ProduceEnd end;
  end.quiet = o.quiet;
  end.close_stream = o.close_stream;
  end.verify = o.verify;
  end.create = o.create;
  end.url = o.url;
  end.producer = &o.producer;
  if (const auto& idempotent = options.producer.protocol.idempotent) end.producer_id = idempotent->producer_id;
  const auto started = Clock::now();

  // Submits, flushes and closes that interrupts can end (interruptible_waits.hpp).
  ProduceWaits waits(*producer, end.records, o.quiet);

  while (true) {
    if (tools::interrupted()) {
      end.interrupted = true;
      break;
    }
    auto next = reader.next();
    if (!next) {
      if (tools::interrupted()) {  // the read was interrupted, not bad
        end.interrupted = true;
        break;
      }
      end.bad_line = next.error();
      break;
    }
    if (!*next) {  // end of input, or stdin's read ended by the signal (InterruptibleStdin)
      end.interrupted = tools::interrupted();
      break;
    }
    const std::string_view line = **next;
    std::string_view record = line;  // what is sent: the line, or the part the stream lacks
    std::optional<CompletedLine> completing;
    if (prefix) {
      auto held = prefix->holds(line, reader.line());
      if (!held) {
        end.resume_problem = held.error();
        break;
      }
      if (*held) {  // the stream holds it already
        if (keep_produced) produced.emplace_back(line);
        ++end.input_records;
        continue;
      }
      if (const std::uint64_t part = prefix->held_part(); part > 0) {  // a run cut off inside this line
        record.remove_prefix(static_cast<std::size_t>(part));
        completing = CompletedLine{reader.line(), part, record.size()};
      }
    }
    auto submitted = waits.submit(record, std::chrono::milliseconds{o.producer.delivery_timeout_ms});
    if (!submitted) {  // the interrupt came while it waited for capacity: not accepted
      end.interrupted = true;
      break;
    }
    auto& r = *submitted;
    if (!r) {
      if (r.error().reason == RejectReason::failed && r.error().terminal) {
        end.failure = *r.error().terminal;
      } else if (r.error().reason == RejectReason::invalid_record ||
                 r.error().reason == RejectReason::record_too_large) {
        end.bad_line = LineError{reader.line(), std::string(r.error().detail)};
      } else {
        end.failure = make_error(ErrorCode::would_block, Certainty::definite, false, std::string(r.error().detail));
      }
      break;
    }
    if (completing) end.completed_line = completing;  // told once it was accepted
    ++end.records;
    ++end.input_records;
    end.record_bytes += record.size();
    if (keep_produced) produced.emplace_back(line);
    if (o.flush_every > 0 && end.records % o.flush_every == 0) waits.flush(false);
    if ((end.records & 1023) == 0) progress.update(end.records, reader.bytes_read());
  }
  progress.update(end.records, reader.bytes_read(), true);
  if (prefix && !end.resume_problem && !end.bad_line && !end.interrupted) end.resume_problem = prefix->at_end();
  if (!end.interrupted) announce_input_read(!end.failure && !end.bad_line && !end.resume_problem);

  // Everything accepted is flushed, whatever stopped the input (nothing is lost).
  if (auto e = waits.flush(true); e && !end.failure) end.failure = e;
  std::optional<asio::CloseStreamResult> closed_stream;
  if (o.close_stream && !end.failure && !end.bad_line && !end.interrupted && !end.resume_problem) {
    closed_stream = waits.wait(producer->async_close_stream(::asio::use_future));
    if (!*closed_stream) end.failure = closed_stream->error();
  }
  auto close_result = waits.wait(producer->async_close(::asio::use_future));
  if (!close_result && !end.failure) end.failure = close_result.error();
  const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
  progress.finish();

  // ---- verification -----------------------------------------------------------------------
  if (o.verify && !end.failure && !end.bad_line && !end.interrupted && !end.resume_problem && !waits.aborted()) {
    if (!created && o.create && !o.resume) {
      end.verify_problem =
          VerifyProblem{"the stream existed before this run; --verify needs a new stream (or --resume)"};
    } else {
      set_interrupt_message(kVerifyInterruptMessage);
      asio::SessionOptions verify_session = options.session;     // the run's TLS ...
      verify_session.header_provider = options.header_provider;  // ... and per-request headers
      end.verify_problem = verify_stream(producer->url(), io, verify_session, read_back, read_back_retries,
                                         file.is_open() ? o.input : std::string{}, o.producer.max_batch_bytes,
                                         end.input_records, produced);
      // A stream that held data before: the likely cause of a difference, which only --create rules out.
      if (end.verify_problem && !end.verify_problem->unread && !o.create && !o.resume) {
        end.verify_problem->message +=
            " (--verify compares the whole stream with the input: a stream that held data before "
            "this run differs; verify a new stream, --create, or use --resume)";
      } else if (end.verify_problem && !end.verify_problem->unread && !end.verify_problem->interrupted &&
                 !(o.producer.no_producer_id && o.producer.max_in_flight > 1)) {  // that case is warned of apart
        // Every record was acknowledged and the stream was this run's: say what can cause it.
        end.verify_problem->message +=
            " (every record was acknowledged: another writer appended to the stream while this run did — "
            "another producer, or a second run of this input —, or the server did not store what it "
            "acknowledged; `prodsm read` shows what the stream holds)";
      }
    }
  }

  // ---- summary and exit status (produce_report.cpp) ----------------------------------------
  end.elapsed_s = elapsed;
  end.flush_latencies_ms = waits.flush_latencies_ms();
  end.skipped_blank_lines = reader.skipped_blank_lines();
  end.dropped_partial_bytes = reader.dropped_partial_bytes();
  end.unterminated_line = reader.unterminated_line();
  end.bytes_mode = !json_mode;
  if (prefix) end.resumed_skipped = prefix->skipped();
  if (closed_stream && *closed_stream) end.closed_at = (*closed_stream)->final_offset;
  end.aborted = waits.aborted();
  return report_produce_end(end, producer->stats());
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
