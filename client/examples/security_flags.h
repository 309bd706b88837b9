// The examples' security flags (docs/operations.md, "Security"): TLS, mutual
// TLS and the worker token, read from a file, never from the command line.
// Defined once here for every example robot.
#ifndef ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_
#define ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_

#include "client/worker.h"

namespace rog {

// Makes --help list the flags of client/examples/ and of the tasks the
// robots train (task/, e.g. task/fmnist/model.cc), this file's too, not only
// the main file's. Call before absl::ParseCommandLine.
void ListExampleFlagsInHelp();

// Copies --tls_ca, --tls_cert, --tls_key, --tls_server_name and
// --token_file into `options`.
void ApplySecurityFlags(WorkerOptions& options);

}  // namespace rog

#endif  // ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_
