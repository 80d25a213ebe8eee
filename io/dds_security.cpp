#include "io/dds_security.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <unistd.h>

namespace rtcosim::io {

void set_security_qos(dds_qos_t* qos, const config::DdsSecuritySpec& sec, const config::HostSpec& me) {
  const std::pair<const char*, const std::string*> files[] = {
      {"dds: security: identity_ca", &sec.identity_ca}, {"dds: security: permissions_ca", &sec.permissions_ca},
      {"dds: security: governance", &sec.governance},   {"the host's certificate", &me.certificate},
      {"the host's private_key", &me.private_key},      {"the host's permissions", &me.permissions}};
  for (const auto& [what, path] : files) {
    if (::access(path->c_str(), R_OK) != 0) {
      throw std::runtime_error("DDS Security: " + std::string(what) + " '" + *path + "' cannot be read (" +
                               std::strerror(errno) + ") — host '" + me.name + "' needs it (docs/dds.md, Security)");
    }
  }
  const auto uri = [](const std::string& path) { return "file:" + path; };
  const std::pair<const char*, std::string> props[] = {{"dds.sec.auth.library.path", "dds_security_auth"},
                                                       {"dds.sec.auth.library.init", "init_authentication"},
                                                       {"dds.sec.auth.library.finalize", "finalize_authentication"},
                                                       {"dds.sec.crypto.library.path", "dds_security_crypto"},
                                                       {"dds.sec.crypto.library.init", "init_crypto"},
                                                       {"dds.sec.crypto.library.finalize", "finalize_crypto"},
                                                       {"dds.sec.access.library.path", "dds_security_ac"},
                                                       {"dds.sec.access.library.init", "init_access_control"},
                                                       {"dds.sec.access.library.finalize", "finalize_access_control"},
                                                       {"dds.sec.auth.identity_ca", uri(sec.identity_ca)},
                                                       {"dds.sec.auth.identity_certificate", uri(me.certificate)},
                                                       {"dds.sec.auth.private_key", uri(me.private_key)},
                                                       {"dds.sec.access.permissions_ca", uri(sec.permissions_ca)},
                                                       {"dds.sec.access.governance", uri(sec.governance)},
                                                       {"dds.sec.access.permissions", uri(me.permissions)}};
  for (const auto& [name, value] : props) dds_qset_prop(qos, name, value.c_str());
}

}  // namespace rtcosim::io
