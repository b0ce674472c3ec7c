// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file base64.hpp
/// Standard base64 (RFC 4648 section 4: alphabet `A-Z a-z 0-9 + /`, `=` padding, no line
/// breaks), as the conformance suite's protocol.ts uses for binary data (Node's
/// Buffer.toString("base64") / Buffer.from(s, "base64")).
///
/// Why not a library: Debian's libb64 (the packaged candidate) inserts a line break every
/// 72 characters and after the last block, and its decoder skips invalid characters
/// silently; the adapter needs exact, validated, single-line base64. nlohmann/json has
/// none. So this is a small encoder/decoder with its own unit tests.

#include <optional>
#include <string>
#include <string_view>

namespace prodsm::base64 {

/// Encodes `bytes` as padded single-line base64.
std::string encode(std::string_view bytes);

/// Decodes padded base64. Returns nullopt for anything else: a character outside the
/// alphabet (whitespace included), a length that is not a multiple of 4, misplaced
/// padding, or non-zero bits in the last character before the padding. Unpadded input is
/// refused too, so every accepted text has exactly one decoding.
std::optional<std::string> decode(std::string_view text);

}  // namespace prodsm::base64
