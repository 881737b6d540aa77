// The run's credential broker (net/credentials.h), set up once before the first command: each
// [network.credentials.NAME] value read from agentexec's environment, the run's CA made in
// memory, and the trust bundle commands read written beside the run's other files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "net/credentials.h"

namespace ae {

struct BrokerSetup {
  std::shared_ptr<net::Broker> broker;
  // For every command: each credential's variable holding its dummy, and the variables common
  // tools read their trust roots from, naming the bundle (SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
  // CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT, npm_config_cafile) or the run's CA alone
  // (NODE_EXTRA_CA_CERTS, which Node adds to its own roots). As "NAME=value".
  std::vector<std::string> env;
};

// `host_dir`: a directory of the run's own that is removed with it, which commands see at
// `command_dir` (the run's /tmp). The bundle holds certificates only.
Result<BrokerSetup> SetUpBroker(const std::vector<net::CredentialSpec>& specs,
                                const std::string& host_dir, const std::string& command_dir);

// `env` ("NAME=value") with every brokered credential's real value, wherever it appears in a
// value, replaced by its dummy: a command may be passed the same secret under another name.
void ReplaceRealValues(const net::Broker& broker, std::vector<std::string>* env);

}  // namespace ae
