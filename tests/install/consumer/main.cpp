// Builds and runs against an installed prodsm: the core accepts a record; the Asio
// and blocking producers reject a bad URL with a named error; the version header is
// the project's.
#include <asio/io_context.hpp>
#include <cstdio>
#include <prodsm/asio/producer.hpp>
#include <prodsm/blocking/producer.hpp>
#include <prodsm/durable_streams.hpp>
#include <prodsm/version.hpp>

// The library and its users compile Asio's handler allocator one way (FindAsio.cmake,
// prodsm.pc): a standard header included first must not switch it to aligned_alloc.
#ifndef ASIO_DISABLE_STD_ALIGNED_ALLOC
#error "ASIO_DISABLE_STD_ALIGNED_ALLOC must come with prodsm::asio (CMake target and prodsm.pc)"
#endif
#ifdef ASIO_HAS_STD_ALIGNED_ALLOC
#error "Asio chose std::aligned_alloc: the library's translation units may not have"
#endif

static_assert(PRODSM_VERSION == PRODSM_VERSION_MAJOR * 10000 + PRODSM_VERSION_MINOR * 100 + PRODSM_VERSION_PATCH);

int main() {
  auto core = prodsm::DurableStreamsProducer::create({});
  if (!core || !core->submit(prodsm::Instant{}, "x")) return 1;
  asio::io_context io;
  prodsm::asio::ProducerOptions options;
  options.url = "ftp://nope";
  auto p = prodsm::asio::Producer::create(io.get_executor(), options);
  if (p || p.error().rfind("url:", 0) != 0) return 1;
  prodsm::blocking::ProducerOptions blocking_options;
  blocking_options.url = "ftp://nope";
  auto b = prodsm::blocking::Producer::create(blocking_options);
  if (b || b.error().rfind("url:", 0) != 0) return 1;
  std::printf("consumer ok (prodsm %s)\n", PRODSM_VERSION_STRING);
  return 0;
}
