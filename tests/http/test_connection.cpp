// SPDX-License-Identifier: Apache-2.0
// http::Connection on byte scripts (placeholder; the real tests follow).
#include <gtest/gtest.h>

#include "prodsm/http/connection.hpp"
