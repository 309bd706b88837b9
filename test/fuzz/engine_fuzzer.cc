// Drives a real rog::Engine in-process (test/testing/engine_testing.h:
// FakeOutboxes, a FakeClock) with sequences of what validated worker
// streams can hand it: hellos with any clock and token, initial values and
// updates of any rows with any counts and values (huge ones included, so
// folds can overflow), progress reports with any clock, acks of any seq,
// goodbyes, closed streams and time passing. The engine must answer, its
// status must be coherent, and its model must be finite
// and equal, bit for bit, to the ledger of the batches it acknowledged,
// after every operation; and Engine::CheckInvariants must hold (no row
// counts more of a worker's iterations than its clock, which the staleness
// bound relies on); and every row batch it sent must decode as a worker
// decodes it, in rogd's codec (fp32, bf16, int8 or sign: the options).
// Input: 1 byte of options, then ops of a few bytes each.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "common/codec.h"
#include "common/uplink_rules.h"
#include "spdlog/spdlog.h"
#include "test/fuzz/fuzz_input.h"
#include "test/testing/engine_testing.h"

namespace {

constexpr int kSlots = 3;
constexpr int kMaxOps = 48;

uint64_t PickClock(rog::FuzzInput& in, uint64_t near) {
  switch (in.Byte() % 6) {
    case 0:
      return 0;
    case 1:
      return near;
    case 2:
      return near + 1;
    case 3:
      return near + 2 + in.Byte() % 8;
    case 4:
      // The highest clock a hello may name, and the one past it.
      return rog::kMaxHelloClock + in.Byte() % 2;
    default:
      return std::numeric_limits<uint64_t>::max() - in.Byte() % 2;
  }
}

uint32_t PickCount(rog::FuzzInput& in) {
  switch (in.Byte() % 5) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
      return 2;
    case 3:
      return 1000;
    default:
      return std::numeric_limits<uint32_t>::max();
  }
}

float PickValue(rog::FuzzInput& in, bool lossy) {
  const uint8_t b = in.Byte();
  switch (b % 8) {
    case 0:
      return 3e38f;
    case 1:
      return -3e38f;
    case 2:
      // With a lossy codec: past what bf16 rounds to a finite value and
      // int8's largest scale (fp32 inputs keep their small integers).
      if (lossy) return (b & 0x80) ? 3.4e38f : -3.4e38f;
      return static_cast<float>(static_cast<int>(b >> 3) - 16);
    default:
      return static_cast<float>(static_cast<int>(b >> 3) - 16);  // exact small integers
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rog::FuzzInput in(data, size);
  const uint8_t options = in.Byte();
  rog::EngineOptions o;
  o.policy = static_cast<rog::SyncPolicy>(options % 3);
  o.staleness = (options >> 2) % 4;
  o.team_size = 1 + ((options >> 4) & 1);
  o.patience = (options & 0x20) ? 1.0 : 0.0;
  // Bits 6-7: rogd's codec (the downlink's; workers push in any).
  o.codec = static_cast<rog::Codec>(options >> 6);
  o.lease_seconds = 5;
  spdlog::set_level(spdlog::level::off);
  rog::EngineHarness h(o);
  const rog::Layout& layout = h.layout();
  std::vector<rog::EngineHarness::Stream> streams(kSlots);
  std::vector<bool> open(kSlots, false);
  std::vector<uint64_t> clock(kSlots, 0);
  for (int op = 0; op < kMaxOps && in.left() > 0; ++op) {
    const int slot = in.Byte() % kSlots;
    rog::EngineHarness::Stream& s = streams[slot];
    const int kind = in.Byte() % 9;
    switch (kind) {
      case 0: {  // hello, resuming or not
        const uint64_t at = PickClock(in, clock[slot]);
        const uint64_t token = (in.Byte() & 1) ? s.token : 0;
        absl::StatusOr<rog::EngineHarness::Stream> got =
            h.Hello(h.MakeHello(std::string(1, static_cast<char>('a' + slot)), at, token));
        if (got.ok()) {
          s = *got;
          open[slot] = true;
          for (const rog::pb::ServerMessage& m : s.outbox->messages()) {
            if (m.has_welcome()) clock[slot] = m.welcome().iteration();
          }
        }
        break;
      }
      case 1:    // initial values
      case 2: {  // an update
        if (!open[slot]) break;
        std::vector<rog::RowId> rows;
        std::vector<uint32_t> counts;
        std::vector<float> values;
        const uint8_t mask = in.Byte();
        for (rog::RowId r = 0; r < layout.num_rows(); ++r) {
          if (r < 8 && !(mask & (1u << r))) continue;
          rows.push_back(r);
          counts.push_back(kind == 1 ? 0 : PickCount(in));
          const float v = PickValue(in, o.codec != rog::Codec::kFp32);
          values.insert(values.end(), layout.row(r).numel, v);
        }
        const bool values_kind = kind == 1;
        if (values_kind) counts.assign(counts.size(), 0);
        // Mostly the clock the worker knows; sometimes any.
        const uint64_t known = s.clock;
        if (in.Byte() & 1) s.clock = PickClock(in, known);
        h.Batch(s, values_kind ? rog::pb::BATCH_KIND_VALUES : rog::pb::BATCH_KIND_UPDATE, rows,
                counts, values);
        s.clock = known;
        break;
      }
      case 3: {  // progress
        if (!open[slot]) break;
        const uint64_t at = PickClock(in, clock[slot]);
        h.Progress(s, at, (in.Byte() & 1) != 0);
        if (at == clock[slot] + 1) clock[slot] = at;
        s.clock = clock[slot];
        break;
      }
      case 4: {  // ack
        if (!open[slot]) break;
        rog::pb::Ack ack;
        ack.set_seq(in.Byte() % 8);
        ack.set_bytes(in.U32());
        h.engine().Ack(s.session, ack);
        break;
      }
      case 5:
        if (open[slot]) h.engine().Goodbye(s.session, "fuzz");
        break;
      case 6:
        if (open[slot]) h.engine().Closed(s.session);
        open[slot] = false;
        break;
      case 7:
        h.clock().Advance(in.Byte() / 16.0);
        break;
      default:
        break;
    }
    // After every operation: the invariants, and the model against the
    // ledger of acknowledged batches.
    h.Settle();
    const absl::Status invariants = h.engine().CheckInvariants();
    if (!invariants.ok()) {
      fprintf(stderr, "after op %d: %s\n", op, std::string(invariants.message()).c_str());
      std::abort();
    }
    h.AccountAll();
    const std::string ledger = h.CheckLedger();
    if (!ledger.empty()) {
      fprintf(stderr, "after op %d, ledger: %s\n", op, ledger.c_str());
      std::abort();
    }
    const std::string downlink = h.CheckDownlinkDecodes();
    if (!downlink.empty()) {
      fprintf(stderr, "after op %d: %s\n", op, downlink.c_str());
      std::abort();
    }
  }
  const rog::pb::StatusReply status = h.engine().Status();
  if (status.max_iteration() > rog::kMaxClock || status.min_iteration() > status.max_iteration()) {
    fprintf(stderr, "status clocks %llu..%llu\n",
            static_cast<unsigned long long>(status.min_iteration()),
            static_cast<unsigned long long>(status.max_iteration()));
    std::abort();
  }
  return 0;
}
