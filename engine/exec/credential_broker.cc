#include "engine/exec/credential_broker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/beneath.h"
#include "base/fd.h"
#include "base/read_file.h"
#include "base/tls_roots.h"

namespace ae {
namespace {

// Written as every file agentexec makes in a directory: base/beneath.h's ReplaceAt (a new
// name, O_EXCL | O_NOFOLLOW, renamed into place), so nothing already there is opened.
Status WriteNewFile(const std::string& dir, const std::string& name, std::string_view data) {
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const int err = dirfd ? ReplaceAt(dirfd.get(), name, data, 0644, /*exact_mode=*/true) : errno;
  if (err != 0)
    return MakeError(fmt::format("cannot write {}/{}: {}", dir, name, std::strerror(err)));
  return {};
}

}  // namespace

Result<BrokerSetup> SetUpBroker(const std::vector<net::CredentialSpec>& specs,
                                const std::string& host_dir, const std::string& command_dir) {
  std::string roots;
  if (const TlsRoots found = HostTlsRoots(); !found.file.empty()) {
    Result<std::string> read = ReadRegularFile(found.file);
    if (!read.ok())
      return MakeError("credential broker: the host's trust roots: " + read.message());
    roots = std::move(*read);
  }
  Result<std::unique_ptr<net::TlsAuthority>> authority = net::TlsAuthority::Create(roots);
  if (!authority.ok()) return authority.error();
  const std::string bundle = (*authority)->BundlePem();
  const std::string ca = (*authority)->ca_pem();
  Result<std::unique_ptr<net::Broker>> broker = net::Broker::Create(
      specs, [](const char* name) { return std::getenv(name); }, std::move(*authority));
  if (!broker.ok()) return broker.error();
  const std::string bundle_name = "agentexec-trust-bundle.pem", ca_name = "agentexec-run-ca.pem";
  for (const auto& [name, text] : {std::pair{bundle_name, bundle}, std::pair{ca_name, ca}}) {
    if (Status written = WriteNewFile(host_dir, name, text); !written.ok()) {
      return MakeError("credential broker: " + written.message());
    }
  }
  BrokerSetup setup;
  setup.env = (*broker)->Environment();
  const std::string bundle_path = command_dir + "/" + bundle_name;
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                           "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile"}) {
    setup.env.push_back(fmt::format("{}={}", name, bundle_path));
  }
  setup.env.push_back(fmt::format("NODE_EXTRA_CA_CERTS={}/{}", command_dir, ca_name));
  setup.broker = std::move(*broker);
  return setup;
}

void ReplaceRealValues(const net::Broker& broker, std::vector<std::string>* env) {
  for (std::string& entry : *env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    for (const net::Credential& c : broker.credentials()) {
      for (size_t at = entry.find(c.real, eq + 1); at != std::string::npos;
           at = entry.find(c.real, at + c.dummy.size())) {
        entry.replace(at, c.real.size(), c.dummy);
      }
    }
  }
}

}  // namespace ae
