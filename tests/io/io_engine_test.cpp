// SPDX-License-Identifier: MIT
// IoEngine tests, run for each backend (io_uring, pread) and each file mode (O_DIRECT where the
// temp file system allows it, forced buffered): random reads against a pattern file, more
// requests than the queue depth, injected EIO / short / interrupted reads, truncation after
// open, registered buffers, and teardown with reads in flight.
#include "io/io_engine.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <thread>
#include <vector>

#include "base/split_offset.h"
#include "io/aligned_buffer.h"
#include "io/io_test_util.h"

namespace sniper {
namespace {

using io_test::first_mismatch;
using io_test::PatternFile;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

struct Param {
  IoBackend backend;
  DirectMode mode;
};

std::string param_name(const testing::TestParamInfo<Param>& info) {
  return std::string(info.param.backend == IoBackend::kUring ? "Uring" : "Pread") +
         (info.param.mode == DirectMode::kForceBuffered ? "Buffered" : "Direct");
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << io_backend_name(p.backend) << (p.mode == DirectMode::kForceBuffered ? "/buffered" : "/direct-if-possible");
}

// One read with its own correctly sized and aligned buffer.
struct PendingRead {
  ReadRequest request;
  AlignedSpan span;
  AlignedBuffer buffer;
  ReadTicket ticket = 0;
};

class IoEngineTest : public testing::TestWithParam<Param> {
 protected:
  // Opens `path` in the parameter's mode (sets file_).
  void open_file(const std::string& path) {
    auto f = DirectFile::open(path, {GetParam().mode});
    ASSERT_TRUE(f.ok()) << f.error().message;
    file_.emplace(std::move(f).value());
  }

  // Creates an engine over file_ with the parameter's backend; skips if io_uring is unavailable.
  std::optional<IoEngine> make_engine(IoOptions options) {
    options.backend = GetParam().backend;
    auto e = IoEngine::create(*file_, std::move(options));
    if (!e.ok()) {
      if (GetParam().backend == IoBackend::kUring) {
        skip_reason_ = e.error().message;
      } else {
        ADD_FAILURE() << e.error().message;
      }
      return std::nullopt;
    }
    EXPECT_EQ(e->backend(), GetParam().backend);
    return std::move(e).value();
  }

  PendingRead make_read(uint64_t offset, uint64_t length) {
    PendingRead r;
    r.span = IoEngine::aligned_span(offset, length, file_->alignment());
    const size_t alignment = std::max<size_t>(4096, file_->buffer_alignment());
    r.buffer = AlignedBuffer(std::max<uint64_t>(r.span.aligned_length, 1), alignment);
    r.request = {offset, length, r.buffer.data()};
    return r;
  }

  static void expect_pattern(const PendingRead& r) {
    const int64_t bad = first_mismatch(r.buffer.data() + r.span.lead, r.request.offset, r.request.length);
    EXPECT_EQ(bad, -1) << "read at offset " << r.request.offset << " length " << r.request.length << " differs at byte "
                       << bad;
  }

  std::optional<DirectFile> file_;
  std::string skip_reason_;
};

#define MAKE_ENGINE_OR_SKIP(var, options)                    \
  std::optional<IoEngine> var = make_engine(options);        \
  if (!var) {                                                \
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_; \
    return;                                                  \
  }

TEST_P(IoEngineTest, RandomReadsMatchThePattern) {
  PatternFile f(io_test::disk_temp_dir(), 5 * kMiB + 4321);
  open_file(f.path());
  if (GetParam().mode == DirectMode::kAuto && !file_->is_direct()) {
    std::printf("note: O_DIRECT unavailable on the temp dir; testing the buffered fallback\n");
  }
  IoOptions options;
  options.queue_depth = 8;
  options.n_threads = 3;
  options.chunk_bytes = 64 * kKiB;  // many requests span several chunks
  MAKE_ENGINE_OR_SKIP(engine, options);

  std::mt19937_64 rng(GetParam().backend == IoBackend::kUring ? 1 : 2);
  uint64_t bytes_requested = 0;
  for (int round = 0; round < 30; ++round) {
    const size_t n = 1 + rng() % 12;
    std::vector<PendingRead> reads;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t offset = rng() % (f.size() + 1);
      uint64_t length;
      switch (rng() % 4) {
        case 0: length = rng() % 5000; break;
        case 1: length = rng() % (300 * kKiB); break;
        case 2: length = f.size() - offset; break;  // to the (unaligned) end of the file
        default: length = 64 * kKiB * (1 + rng() % 3) + rng() % 3; break;
      }
      length = std::min(length, f.size() - offset);
      reads.push_back(make_read(offset, length));
      bytes_requested += length;
    }
    std::vector<ReadRequest> requests;
    for (const PendingRead& r : reads) requests.push_back(r.request);
    std::vector<ReadTicket> tickets(n);
    ASSERT_TRUE(engine->submit_batch(requests, tickets).ok());
    for (size_t i = 0; i < n; ++i) reads[i].ticket = tickets[i];
    std::shuffle(reads.begin(), reads.end(), rng);  // wait in random order
    for (const PendingRead& r : reads) {
      const Status st = engine->wait(r.ticket);
      ASSERT_TRUE(st.ok()) << st.error().message;
      expect_pattern(r);
    }
  }
  const IoStats& s = engine->stats();
  EXPECT_EQ(s.bytes_requested, bytes_requested);
  EXPECT_GE(s.bytes_read, bytes_requested);
  EXPECT_EQ(s.n_failed, 0u);
  EXPECT_EQ(engine->n_outstanding(), 0u);
  if (!file_->is_direct()) {
    EXPECT_EQ(s.bytes_read, bytes_requested);  // no alignment padding
  }
}

TEST_P(IoEngineTest, ManyMoreRequestsThanQueueDepthAllComplete) {
  PatternFile f(io_test::disk_temp_dir(), 2 * kMiB);
  open_file(f.path());
  IoOptions options;
  options.queue_depth = 8;
  options.n_threads = 4;
  MAKE_ENGINE_OR_SKIP(engine, options);
  std::mt19937_64 rng(7);
  std::vector<PendingRead> reads;
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t length = 4 * kKiB + rng() % (16 * kKiB);
    const uint64_t offset = rng() % (f.size() - length);
    reads.push_back(make_read(offset, length));
    requests.push_back(reads.back().request);
  }
  std::vector<ReadTicket> tickets(requests.size());
  ASSERT_TRUE(engine->submit_batch(requests, tickets).ok());
  EXPECT_EQ(engine->n_outstanding(), 1000u);
  const Status st = engine->wait_all();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(engine->n_outstanding(), 0u);
  for (const PendingRead& r : reads) expect_pattern(r);
  const IoStats& s = engine->stats();
  EXPECT_EQ(s.n_requests, 1000u);
  EXPECT_GE(s.n_reads, 1000u);
  EXPECT_GE(s.max_in_flight, 1u);
  EXPECT_LE(s.max_in_flight, GetParam().backend == IoBackend::kUring ? 8u : 4u);
}

TEST_P(IoEngineTest, SingleSubmitsWaitedInReverseOrder) {
  PatternFile f(io_test::disk_temp_dir(), 1 * kMiB + 3);
  open_file(f.path());
  IoOptions options;
  options.queue_depth = 4;
  options.n_threads = 2;
  options.chunk_bytes = 16 * kKiB;
  MAKE_ENGINE_OR_SKIP(engine, options);
  std::vector<PendingRead> reads;
  for (uint64_t i = 0; i < 200; ++i) {
    const uint64_t offset = (i * 5003) % (f.size() - 40000);
    reads.push_back(make_read(offset, 1 + (i * 997) % 40000));
    auto t = engine->submit(reads.back().request);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_NE(*t, 0u);
    reads.back().ticket = *t;
  }
  for (auto it = reads.rbegin(); it != reads.rend(); ++it) {
    const Status st = engine->wait(it->ticket);
    ASSERT_TRUE(st.ok()) << st.error().message;
    expect_pattern(*it);
  }
}

TEST_P(IoEngineTest, IsDoneEventuallyReportsCompletion) {
  PatternFile f(io_test::disk_temp_dir(), 512 * kKiB);
  open_file(f.path());
  MAKE_ENGINE_OR_SKIP(engine, IoOptions{});
  PendingRead r = make_read(1000, 300 * kKiB);
  auto t = engine->submit(r.request);
  ASSERT_TRUE(t.ok());
  bool done = false;
  for (int i = 0; i < 20000 && !done; ++i) {
    done = engine->is_done(*t);
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_TRUE(done);
  EXPECT_DOUBLE_EQ(engine->stats().stall_seconds, 0.0);  // nothing blocked in wait()
  ASSERT_TRUE(engine->wait(*t).ok());
  expect_pattern(r);
}

TEST_P(IoEngineTest, ZeroLengthAndOutOfRangeRequests) {
  PatternFile f(io_test::disk_temp_dir(), 100000);
  open_file(f.path());
  MAKE_ENGINE_OR_SKIP(engine, IoOptions{});
  PendingRead empty = make_read(12345, 0);
  auto t = engine->submit(empty.request);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(engine->is_done(*t));
  EXPECT_TRUE(engine->wait(*t).ok());

  PendingRead past = make_read(100000 - 10, 11);
  auto bad = engine->submit(past.request);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message, "offset 99990 with length 11")) << bad.error().message;
  EXPECT_TRUE(contains(bad.error().message, "100000 bytes")) << bad.error().message;

  // A batch with one bad request queues nothing.
  PendingRead good = make_read(0, 100);
  const ReadRequest batch[] = {good.request, past.request};
  ReadTicket tickets[2];
  EXPECT_FALSE(engine->submit_batch(batch, tickets).ok());
  EXPECT_EQ(engine->n_outstanding(), 0u);
  EXPECT_EQ(engine->stats().n_requests, 1u);  // only the empty read
}

TEST_P(IoEngineTest, InjectedEioFailsOnlyTheAffectedRequest) {
  PatternFile f(io_test::disk_temp_dir(), 4 * kMiB);
  open_file(f.path());
  constexpr uint64_t kBadByte = 2 * kMiB + 100;
  IoOptions options;
  options.chunk_bytes = 256 * kKiB;
  options.fault_injector = [](uint64_t offset, uint64_t length) {
    FaultAction a;
    if (offset <= kBadByte && kBadByte < offset + length) a.error = EIO;
    return a;
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  PendingRead hit = make_read(kMiB + 5, 2 * kMiB);  // covers kBadByte
  PendingRead miss = make_read(3 * kMiB, 100000);
  auto t_hit = engine->submit(hit.request);
  auto t_miss = engine->submit(miss.request);
  ASSERT_TRUE(t_hit.ok() && t_miss.ok());
  const Status st = engine->wait(*t_hit);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, std::strerror(EIO))) << st.error().message;
  EXPECT_TRUE(contains(st.error().message, f.path())) << st.error().message;
  EXPECT_TRUE(contains(st.error().message, "request: offset 1048581")) << st.error().message;
  ASSERT_TRUE(engine->wait(*t_miss).ok());
  expect_pattern(miss);
  EXPECT_EQ(engine->stats().n_failed, 1u);
}

TEST_P(IoEngineTest, ShortReadsAreRetriedForTheRemainder) {
  PatternFile f(io_test::disk_temp_dir(), 3 * kMiB + 77);
  open_file(f.path());
  std::atomic<uint64_t> calls{0};
  IoOptions options;
  options.chunk_bytes = 128 * kKiB;
  // Every other read delivers only 1000 bytes (unaligned: O_DIRECT must restart aligned).
  options.fault_injector = [&calls](uint64_t, uint64_t) {
    FaultAction a;
    if (calls.fetch_add(1) % 2 == 0) a.max_bytes = 1000;
    return a;
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  std::vector<PendingRead> reads;
  std::vector<ReadRequest> requests;
  for (uint64_t i = 0; i < 20; ++i) {
    const uint64_t offset = i * 150001;
    reads.push_back(make_read(offset, std::min<uint64_t>(200000 + i * 999, f.size() - offset)));
    requests.push_back(reads.back().request);
  }
  std::vector<ReadTicket> tickets(requests.size());
  ASSERT_TRUE(engine->submit_batch(requests, tickets).ok());
  const Status st = engine->wait_all();
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (const PendingRead& r : reads) expect_pattern(r);
  EXPECT_GT(engine->stats().n_retries, 0u);
  EXPECT_EQ(engine->stats().n_reads, calls.load());
}

TEST_P(IoEngineTest, InterruptedReadsAreRetriedThenGiveUp) {
  PatternFile f(io_test::disk_temp_dir(), kMiB);
  open_file(f.path());
  std::atomic<bool> always{false};
  std::atomic<uint64_t> calls{0};
  IoOptions options;
  options.fault_injector = [&](uint64_t, uint64_t) {
    FaultAction a;
    if (always.load() || calls.fetch_add(1) % 3 == 0) a.error = EINTR;
    return a;
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  PendingRead r = make_read(4097, 500000);
  auto t = engine->submit(r.request);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(engine->wait(*t).ok());
  expect_pattern(r);

  always = true;
  t = engine->submit(r.request);
  ASSERT_TRUE(t.ok());
  const Status st = engine->wait(*t);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, std::strerror(EINTR))) << st.error().message;
}

TEST_P(IoEngineTest, ReadsThatNeverProgressReportEndOfFile) {
  PatternFile f(io_test::disk_temp_dir(), kMiB);
  open_file(f.path());
  IoOptions options;
  options.fault_injector = [](uint64_t, uint64_t) {
    FaultAction a;
    a.max_bytes = 0;
    return a;
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  PendingRead r = make_read(1000, 5000);
  auto t = engine->submit(r.request);
  ASSERT_TRUE(t.ok());
  const Status st = engine->wait(*t);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "expected 5000 bytes, got 0")) << st.error().message;
  EXPECT_TRUE(contains(st.error().message, "file truncated?")) << st.error().message;
}

TEST_P(IoEngineTest, TruncationAfterOpenIsAnErrorNotShortData) {
  PatternFile f(io_test::disk_temp_dir(), 4 * kMiB);
  open_file(f.path());
  MAKE_ENGINE_OR_SKIP(engine, IoOptions{});
  ASSERT_EQ(::truncate(f.path().c_str(), kMiB), 0);
  PendingRead beyond = make_read(2 * kMiB, 100 * kKiB);  // valid for the size at open
  PendingRead across = make_read(kMiB - 1000, 5000);     // ends 4000 bytes past the new EOF
  PendingRead before = make_read(kMiB - 9000, 5000);     // still inside the file
  auto t1 = engine->submit(beyond.request);
  auto t2 = engine->submit(across.request);
  auto t3 = engine->submit(before.request);
  ASSERT_TRUE(t1.ok() && t2.ok() && t3.ok());
  Status st = engine->wait(*t1);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "expected 102400 bytes, got 0")) << st.error().message;
  EXPECT_TRUE(contains(st.error().message, "truncated")) << st.error().message;
  st = engine->wait(*t2);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, "expected 5000 bytes, got 1000")) << st.error().message;
  ASSERT_TRUE(engine->wait(*t3).ok());
  expect_pattern(before);
  EXPECT_FALSE(file_->check_unchanged().ok());
}

TEST_P(IoEngineTest, WaitAllReturnsTheFirstErrorAndRetiresEverything) {
  PatternFile f(io_test::disk_temp_dir(), kMiB);
  open_file(f.path());
  IoOptions options;
  options.fault_injector = [](uint64_t offset, uint64_t) {
    FaultAction a;
    if (offset >= 512 * kKiB) a.error = EIO;
    return a;
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  PendingRead ok_read = make_read(0, 4096);
  PendingRead bad_read = make_read(600 * kKiB, 4096);
  ASSERT_TRUE(engine->submit(ok_read.request).ok());
  ASSERT_TRUE(engine->submit(bad_read.request).ok());
  const Status st = engine->wait_all();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.error().message, std::strerror(EIO))) << st.error().message;
  EXPECT_EQ(engine->n_outstanding(), 0u);
  expect_pattern(ok_read);
  // The engine stays usable.
  auto t = engine->submit(ok_read.request);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(engine->wait(*t).ok());
}

TEST_P(IoEngineTest, RegisteredBuffersUseFixedReads) {
  PatternFile f(io_test::disk_temp_dir(), 2 * kMiB);
  open_file(f.path());
  // The arena is declared before the engine so it outlives every read.
  AlignedBuffer arena(kMiB + 64 * kKiB, 4096);
  AlignedBuffer loose(256 * kKiB, 4096);
  IoOptions options;
  options.chunk_bytes = 64 * kKiB;
  MAKE_ENGINE_OR_SKIP(engine, options);
  const iovec iov{arena.data(), arena.size()};
  ASSERT_TRUE(engine->register_buffers(std::span<const iovec>(&iov, 1)).ok());

  const uint64_t offset = 300001;
  const AlignedSpan span = engine->span_for(offset, kMiB);
  ASSERT_LE(span.aligned_length, arena.size());
  auto t1 = engine->submit({offset, kMiB, arena.data()});
  auto t2 = engine->submit({8192, 200 * kKiB, loose.data()});
  ASSERT_TRUE(t1.ok() && t2.ok());
  ASSERT_TRUE(engine->wait(*t1).ok());
  ASSERT_TRUE(engine->wait(*t2).ok());
  EXPECT_EQ(first_mismatch(arena.data() + span.lead, offset, kMiB), -1);
  EXPECT_EQ(first_mismatch(loose.data(), 8192, 200 * kKiB), -1);
  const IoStats& s = engine->stats();
  if (GetParam().backend == IoBackend::kUring) {
    EXPECT_GE(s.n_fixed_reads, 16u);        // the arena read: 1 MiB in 64 KiB chunks
    EXPECT_LT(s.n_fixed_reads, s.n_reads);  // the loose buffer used plain reads
  } else {
    EXPECT_EQ(s.n_fixed_reads, 0u);
  }
  // Re-registering (and unregistering) works with nothing outstanding.
  const uint64_t fixed_before = s.n_fixed_reads;
  ASSERT_TRUE(engine->register_buffers({}).ok());
  auto t3 = engine->submit({offset, kMiB, arena.data()});
  ASSERT_TRUE(t3.ok());
  ASSERT_TRUE(engine->wait(*t3).ok());
  EXPECT_EQ(engine->stats().n_fixed_reads, fixed_before);
}

TEST_P(IoEngineTest, DestroyingWithReadsInFlightIsSafe) {
  PatternFile f(io_test::disk_temp_dir(), 4 * kMiB);
  open_file(f.path());
  std::vector<PendingRead> reads;
  for (uint64_t i = 0; i < 64; ++i) reads.push_back(make_read(i * 61441, 64 * kKiB + i));
  {
    IoOptions options;
    options.queue_depth = 4;
    options.n_threads = 2;
    options.chunk_bytes = 16 * kKiB;
    MAKE_ENGINE_OR_SKIP(engine, options);
    for (PendingRead& r : reads) ASSERT_TRUE(engine->submit(r.request).ok());
  }  // the engine waits for reads in flight here; reads not issued are dropped
  SUCCEED();
}

TEST_P(IoEngineTest, StatsCountStallTimeAndReset) {
  PatternFile f(io_test::disk_temp_dir(), 2 * kMiB);
  open_file(f.path());
  IoOptions options;
  options.fault_injector = [](uint64_t, uint64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // slow "device" (pread workers)
    return FaultAction{};
  };
  MAKE_ENGINE_OR_SKIP(engine, std::move(options));
  PendingRead r = make_read(0, 2 * kMiB);
  auto t = engine->submit(r.request);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(engine->wait(*t).ok());
  const IoStats& s = engine->stats();
  EXPECT_EQ(s.n_requests, 1u);
  EXPECT_EQ(s.bytes_requested, 2 * kMiB);
  EXPECT_EQ(s.bytes_read, 2 * kMiB);
  EXPECT_EQ(s.n_reads, 2u);  // two 1 MiB chunks
  if (GetParam().backend == IoBackend::kPread) {
    EXPECT_GT(s.stall_seconds, 0.001);
  }
  EXPECT_GT(s.stall_seconds, 0.0);
  engine->reset_stats();
  EXPECT_EQ(engine->stats().n_requests, 0u);
  EXPECT_EQ(engine->stats().stall_seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, IoEngineTest,
                         testing::Values(Param{IoBackend::kUring, DirectMode::kAuto},
                                         Param{IoBackend::kUring, DirectMode::kForceBuffered},
                                         Param{IoBackend::kPread, DirectMode::kAuto},
                                         Param{IoBackend::kPread, DirectMode::kForceBuffered}),
                         param_name);

// A split model's parts: offset make_part_offset(k, x) reads file k at x, each file checked
// against its own size; a part index past the files is an error, not a read of file 0.
TEST_P(IoEngineTest, PartOffsetsReadFromTheirOwnFile) {
  PatternFile a(io_test::disk_temp_dir(), 3 * kMiB + 123, "part0");
  PatternFile b(io_test::disk_temp_dir(), 1 * kMiB + 4567, "part1");
  auto fa = DirectFile::open(a.path(), {GetParam().mode});
  auto fb = DirectFile::open(b.path(), {GetParam().mode});
  ASSERT_TRUE(fa.ok() && fb.ok());
  IoOptions options;
  options.backend = GetParam().backend;
  options.chunk_bytes = 256 * kKiB;
  auto e = IoEngine::create(std::vector<const DirectFile*>{&*fa, &*fb}, options);
  if (!e.ok()) {
    if (GetParam().backend == IoBackend::kUring) GTEST_SKIP() << e.error().message;
    FAIL() << e.error().message;
  }
  struct Case {
    uint32_t part;
    uint64_t offset, length;
  };
  for (const Case& c :
       {Case{0, 5, 1 * kMiB}, Case{1, 77, 300 * kKiB}, Case{1, 1 * kMiB, 4567}, Case{0, 3 * kMiB, 123}}) {
    const uint64_t at = make_part_offset(c.part, c.offset);
    const AlignedSpan span = e->span_for(at, c.length);
    AlignedBuffer buf(span.aligned_length, std::max<size_t>(4096, e->buffer_alignment()));
    auto t = e->submit({at, c.length, buf.data()});
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_TRUE(e->wait(*t).ok());
    EXPECT_EQ(first_mismatch(buf.data() + span.lead, c.offset, c.length), -1)
        << "part " << c.part << " at " << c.offset;
  }
  AlignedBuffer buf(2 * kMiB, 4096);
  auto past = e->submit({make_part_offset(1, 1 * kMiB), 8192, buf.data()});  // part 1 is 1 MiB + 4567 bytes
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(contains(past.error().message, b.path())) << past.error().message;
  auto no_part = e->submit({make_part_offset(2, 0), 4096, buf.data()});
  ASSERT_FALSE(no_part.ok());
  EXPECT_TRUE(contains(no_part.error().message, "names part 2 but the model has 2 file(s)")) << no_part.error().message;
}

TEST(IoEngine, AlignedSpanArithmetic) {
  AlignedSpan s = IoEngine::aligned_span(5000, 100, 4096);
  EXPECT_EQ(s.aligned_offset, 4096u);
  EXPECT_EQ(s.lead, 904u);
  EXPECT_EQ(s.aligned_length, 4096u);
  s = IoEngine::aligned_span(4000, 200, 4096);  // crosses a boundary
  EXPECT_EQ(s.aligned_offset, 0u);
  EXPECT_EQ(s.aligned_length, 8192u);
  s = IoEngine::aligned_span(8192, 4096, 4096);  // already aligned
  EXPECT_EQ(s.aligned_offset, 8192u);
  EXPECT_EQ(s.lead, 0u);
  EXPECT_EQ(s.aligned_length, 4096u);
  s = IoEngine::aligned_span(12345, 678, 1);  // buffered: no widening
  EXPECT_EQ(s.aligned_offset, 12345u);
  EXPECT_EQ(s.lead, 0u);
  EXPECT_EQ(s.aligned_length, 678u);
  s = IoEngine::aligned_span(5000, 0, 512);
  EXPECT_EQ(s.aligned_length, 0u);
}

TEST(IoEngine, RejectsOptionsOutOfRange) {
  PatternFile f(io_test::disk_temp_dir(), 4096);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  IoOptions o;
  o.queue_depth = 0;
  auto e = IoEngine::create(*file, o);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.error().message, "queue_depth is 0 but must be in [1, 4096]")) << e.error().message;
  o = IoOptions{};
  o.n_threads = 300;
  e = IoEngine::create(*file, o);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.error().message, "n_threads is 300")) << e.error().message;
  o = IoOptions{};
  o.chunk_bytes = 1000;
  e = IoEngine::create(*file, o);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.error().message, "chunk_bytes is 1000")) << e.error().message;
}

TEST(IoEngine, AutoBackendPicksAWorkingOne) {
  PatternFile f(io_test::disk_temp_dir(), 64 * kKiB);
  auto file = DirectFile::open(f.path());
  ASSERT_TRUE(file.ok());
  auto e = IoEngine::create(*file);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_NE(e->backend(), IoBackend::kAuto);
  EXPECT_STREQ(io_backend_name(e->backend()), e->backend() == IoBackend::kUring ? "io_uring" : "pread");
}

}  // namespace
}  // namespace sniper
