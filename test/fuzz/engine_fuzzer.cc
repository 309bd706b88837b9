// Drives a real rog::Engine in-process (test/testing/engine_testing.h:
// FakeOutboxes, a FakeClock) with sequences of what validated worker
// streams can hand it: hellos with any clock and token, initial values and
// updates of any rows with any counts and values (huge ones included, so
// folds can overflow), progress reports with any clock, acks of any seq,
// goodbyes, closed streams and time passing; and rarely (EdgeOp) hellos
// that account for their last stream's downlink, with any stream id and
// seq, sdk_version strings too long or not printable, and clocks at
// counting's end. The engine must answer, its
// status must be coherent, and its model must be finite
// and equal, bit for bit, to the ledger of the batches it acknowledged,
// after every operation; and Engine::CheckInvariants must hold (no row
// counts more of a worker's iterations than its clock, which the staleness
// bound relies on); and every row batch it sent must decode as a worker
// decodes it, in rogd's codec (fp32, bf16, int8 or sign: the options).
// Input: 1 byte of options, then ops of a few bytes each. FUZZ_LOG=1 in
// the environment shows rogd's log (off otherwise).
#include <algorithm>
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

std::string SlotId(int slot) { return std::string(1, static_cast<char>('a' + slot)); }

// A hello on a slot's behalf: on success the slot's stream, open, at the
// welcome's clock.
void SayHello(rog::EngineHarness& h, const rog::pb::Hello& hello, rog::EngineHarness::Stream* s,
              bool* open, uint64_t* clock) {
  absl::StatusOr<rog::EngineHarness::Stream> got = h.Hello(hello);
  if (!got.ok()) return;
  *s = *got;
  *open = true;
  for (const rog::pb::ServerMessage& m : s->outbox->messages()) {
    if (m.has_welcome()) *clock = m.welcome().iteration();
  }
}

// What a client sends rarely: a hello that accounts for its last stream's
// downlink (Hello.downlink_stream and last_applied_downlink_seq: the
// stream's id or any, a seq rogd sent or not), with an sdk_version too
// long or not printable; and clocks at counting's end (2^52).
void EdgeOp(rog::FuzzInput& in, rog::EngineHarness& h, int slot, rog::EngineHarness::Stream* s,
            bool* open, uint64_t* clock) {
  const uint8_t pick = in.Byte();
  const uint64_t at_end = rog::kMaxClock - 1 + in.Byte() % 3;
  if (pick % 3 == 1) {
    if (*open) h.Progress(*s, at_end, (pick & 0x10) != 0);
    return;
  }
  if (pick % 3 == 2) {
    SayHello(h, h.MakeHello(SlotId(slot), at_end, s->token), s, open, clock);
    return;
  }
  uint64_t stream = 0, last_seq = 0;
  if (s->outbox) {
    for (const rog::pb::ServerMessage& m : s->outbox->messages()) {
      if (m.has_welcome()) stream = m.welcome().stream();
      if (m.has_batch()) last_seq = std::max<uint64_t>(last_seq, m.batch().seq());
    }
  }
  rog::pb::Hello hello = h.MakeHello(SlotId(slot), PickClock(in, *clock), s->token);
  const uint8_t b = in.Byte();
  hello.set_downlink_stream((b & 1) ? stream : in.U32());
  const uint64_t applied[] = {0, last_seq, last_seq > 0 ? last_seq - 1 : 0, last_seq + 1,
                              std::numeric_limits<uint64_t>::max()};
  hello.set_last_applied_downlink_seq(applied[(b >> 1) % 5]);
  if (b & 0x10) hello.set_sdk_version((b & 0x20) ? std::string(129, 'v') : std::string("1.0\n"));
  SayHello(h, hello, s, open, clock);
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
  spdlog::set_level(getenv("FUZZ_LOG") ? spdlog::level::info : spdlog::level::off);
  rog::EngineHarness h(o);
  const rog::Layout& layout = h.layout();
  std::vector<rog::EngineHarness::Stream> streams(kSlots);
  bool open[kSlots] = {};
  std::vector<uint64_t> clock(kSlots, 0);
  for (int op = 0; op < kMaxOps && in.left() > 0; ++op) {
    const int slot = in.Byte() % kSlots;
    rog::EngineHarness::Stream& s = streams[slot];
    const int kind = in.Byte() % 9;
    switch (kind) {
      case 0: {  // hello, resuming or not
        const uint64_t at = PickClock(in, clock[slot]);
        const uint64_t token = (in.Byte() & 1) ? s.token : 0;
        SayHello(h, h.MakeHello(SlotId(slot), at, token), &s, &open[slot], &clock[slot]);
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
        EdgeOp(in, h, slot, &s, &open[slot], &clock[slot]);
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
