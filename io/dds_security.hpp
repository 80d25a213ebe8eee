#pragma once

#include <dds/dds.h>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::io {

// Sets on a participant's QoS the DDS Security properties (docs/dds.md,
// "Security") for host `me`: Cyclone's OMG plugins (authentication, access
// control, cryptography), the graph's CAs and governance, the host's
// certificate, key and permissions, as file: URIs. Each file is checked
// readable first, since Cyclone only says "error" and logs the reason.
// Set-up only; throws std::runtime_error naming a file that cannot be read.
void set_security_qos(dds_qos_t* qos, const config::DdsSecuritySpec& security, const config::HostSpec& me);

}  // namespace rtcosim::io
