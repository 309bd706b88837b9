// Raw Trainer.Session streams against a real rogd, for tests of what rogd
// refuses: messages a well-behaved rog::Worker would never send.
#ifndef ROG_TEST_TESTING_RAW_STREAM_H_
#define ROG_TEST_TESTING_RAW_STREAM_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/layout.h"
#include "grpcpp/grpcpp.h"
#include "proto/convert.h"
#include "rog.grpc.pb.h"

namespace rog {

struct RawResult {
  grpc::StatusCode code;
  std::string message;
};

// Reads a stream to its end: rogd's in-band pb::StreamEnd when it ended the
// stream itself (the status may then read CANCELLED), else the status.
template <typename Stream>
RawResult ReadToEnd(Stream* stream) {
  pb::ServerMessage reply;
  std::unique_ptr<RawResult> in_band;
  while (stream->Read(&reply)) {
    if (reply.has_end()) {
      in_band = std::make_unique<RawResult>(
          RawResult{static_cast<grpc::StatusCode>(reply.end().code()), reply.end().message()});
    }
  }
  const grpc::Status s = stream->Finish();
  if (in_band != nullptr) return *in_band;
  return RawResult{s.error_code(), s.error_message()};
}

// Opens a raw stream, writes `messages` and a Goodbye (a stream that ends
// without one is refused as "unparseable": rogd cannot tell it from a
// message gRPC could not parse), and returns how rogd ended it: its status,
// or what its in-band pb::StreamEnd said when it ended the stream itself.
inline RawResult Raw(const std::string& address, const std::vector<pb::WorkerMessage>& messages) {
  auto stub =
      pb::Trainer::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->Session(&ctx);
  bool ok = true;
  for (const pb::WorkerMessage& m : messages) {
    if (!(ok = stream->Write(m))) break;
  }
  if (ok) {
    pb::WorkerMessage goodbye;
    goodbye.mutable_goodbye()->set_reason("raw test stream");
    stream->Write(goodbye);
  }
  stream->WritesDone();
  return ReadToEnd(stream.get());
}

// A stream held open by the test: it writes what the test says and reads
// nothing until Welcome or Finish. Each has its own channel (its own connection), as
// separate robots would.
class OpenStream {
 public:
  // `small_window`: the connection takes in little unread data (a 4 KiB
  // HTTP/2 window, no BDP probing), as a reader that does not read would.
  explicit OpenStream(const std::string& address, double deadline_seconds = 30,
                      bool small_window = false) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (small_window) {
      args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
      args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 4096);
    }
    stub_ = pb::Trainer::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    ctx_.set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int>(deadline_seconds * 1000)));
    stream_ = stub_->Session(&ctx_);
  }
  ~OpenStream() {
    if (!finished_) {
      ctx_.TryCancel();
      Finish();
    }
  }
  bool Write(const pb::WorkerMessage& m) { return stream_->Write(m); }
  // Reads until rogd's Welcome; empty if the stream ended first.
  pb::Welcome Welcome() {
    pb::ServerMessage m;
    while (stream_->Read(&m)) {
      if (m.has_welcome()) return m.welcome();
    }
    return pb::Welcome();
  }
  // Reads whatever rogd sent, then how it ended the stream (ReadToEnd).
  RawResult Finish() {
    finished_ = true;
    return ReadToEnd(stream_.get());
  }
  void Cancel() { ctx_.TryCancel(); }

 private:
  std::unique_ptr<pb::Trainer::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::WorkerMessage, pb::ServerMessage>> stream_;
  bool finished_ = false;
};

inline pb::WorkerMessage HelloFor(const std::string& id, const Layout& layout) {
  pb::WorkerMessage m;
  pb::Hello* h = m.mutable_hello();
  h->set_worker_id(id);
  h->set_layout_fingerprint(layout.fingerprint());
  *h->mutable_layout() = LayoutToProto(layout);
  return m;
}

// A well-formed one-row update of row 1 with `numel` fp32 values.
inline pb::WorkerMessage GoodBatch(uint64_t seq, uint32_t numel) {
  pb::WorkerMessage m;
  pb::RowBatch* b = m.mutable_batch();
  b->set_seq(seq);
  b->set_iteration(1);
  b->set_codec(pb::CODEC_FP32);
  b->set_kind(pb::BATCH_KIND_UPDATE);
  b->add_row_delta(1);
  b->add_count(1);
  b->add_version_lag(0);
  b->set_payload(std::string(numel * 4, '\0'));
  return m;
}

}  // namespace rog

#endif  // ROG_TEST_TESTING_RAW_STREAM_H_
