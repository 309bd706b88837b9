// The security flags every example worker takes (README "Security"):
// --tls_ca, --tls_cert, --tls_key, --tls_server_name and --token_file, the
// worker token read from a file, never from the command line.
#ifndef ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_
#define ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_

#include "client/worker.h"

namespace rog {

// Copies the flags into `options`; rog::Worker::Start reads the files.
void ApplySecurityFlags(WorkerOptions* options);

}  // namespace rog

#endif  // ROG_CLIENT_EXAMPLES_SECURITY_FLAGS_H_
