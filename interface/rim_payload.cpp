#include "interface/rim_payload.hpp"

#include <cmath>

namespace rtcosim::interface {

std::size_t RimPayload::pack(std::span<double> out) const noexcept {
  if (dims == 0 || dims > kMaxInterfaceDims || out.size() < flat_size(dims)) return 0;
  std::size_t k = 0;
  out[k++] = tag;
  out[k++] = static_cast<double>(dims);
  out[k++] = static_cast<double>(status);
  out[k++] = condition;
  for (std::size_t i = 0; i < dims * dims; ++i) out[k++] = m_eff[i];
  for (std::size_t i = 0; i < dims; ++i) out[k++] = lambda_tilde[i];
  for (std::size_t i = 0; i < dims; ++i) out[k++] = z[i];
  for (std::size_t i = 0; i < dims; ++i) out[k++] = velocity[i];
  for (std::size_t i = 0; i < dims; ++i) out[k++] = position[i];
  return k;
}

std::string_view rim_unpack_error_text(RimUnpackError error) noexcept {
  switch (error) {
    case RimUnpackError::kNone:
      return "ok";
    case RimUnpackError::kTooShort:
      return "RIM payload shorter than its header or than 4 + ni^2 + 4 ni doubles";
    case RimUnpackError::kBadDimension:
      return "RIM payload interface dimension is not an integer in [1, 6]";
    case RimUnpackError::kBadStatus:
      return "RIM payload status is not 0 (ok), 1 (singular_interface), 2 (singular_mass) or 3 (non_finite)";
    case RimUnpackError::kNonFinite:
      return "RIM payload carries a NaN or infinite tag, matrix or vector entry";
    case RimUnpackError::kBadCondition:
      return "RIM payload condition number is NaN or below 1 (must be >= 1 or +inf)";
  }
  return "unknown RIM payload error";
}

RimUnpackError unpack_rim_payload(std::span<const double> in, RimPayload& out) noexcept {
  if (in.size() < RimPayload::kHeader) return RimUnpackError::kTooShort;
  const double ni = in[1];
  if (!(ni >= 1.0 && ni <= static_cast<double>(RimPayload::kMaxInterfaceDims)) || ni != std::floor(ni)) {
    return RimUnpackError::kBadDimension;
  }
  const auto dims = static_cast<std::size_t>(ni);
  if (in.size() < RimPayload::flat_size(dims)) return RimUnpackError::kTooShort;
  const double status = in[2];
  if (!(status >= 0.0 && status <= 3.0) || status != std::floor(status)) return RimUnpackError::kBadStatus;
  // The condition is +inf for a rank-deficient model; NaN or < 1 cannot come
  // from a symmetric positive semi-definite G.
  if (!(in[3] >= 1.0)) return RimUnpackError::kBadCondition;
  if (!std::isfinite(in[0])) return RimUnpackError::kNonFinite;
  for (std::size_t i = RimPayload::kHeader; i < RimPayload::flat_size(dims); ++i) {
    if (!std::isfinite(in[i])) return RimUnpackError::kNonFinite;
  }
  out.tag = in[0];
  out.dims = dims;
  out.status = static_cast<std::uint8_t>(status);
  out.condition = in[3];
  std::size_t k = RimPayload::kHeader;
  for (std::size_t i = 0; i < dims * dims; ++i) out.m_eff[i] = in[k++];
  for (std::size_t i = 0; i < dims; ++i) out.lambda_tilde[i] = in[k++];
  for (std::size_t i = 0; i < dims; ++i) out.z[i] = in[k++];
  for (std::size_t i = 0; i < dims; ++i) out.velocity[i] = in[k++];
  for (std::size_t i = 0; i < dims; ++i) out.position[i] = in[k++];
  return RimUnpackError::kNone;
}

}  // namespace rtcosim::interface
