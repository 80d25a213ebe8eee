#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rtcosim::interface {

/*
 * RimPayload: one reduced interface model as it travels from the subsystem
 * that computed it to the one that integrates it (issue 16; paper eq. 2:
 * M_eff w_i' + z_i = lambda_i + lambda~). Independent of DataBlock and of
 * Eigen so that it can ride in the values of an ordinary block through the
 * existing lock-free Link: pack() writes it as flat doubles, unpack() reads
 * and validates them (the other side is another task, possibly a plugin,
 * so the numbers are checked, not trusted).
 *
 * Fixed capacity (kMaxInterfaceDims = 6: a rigid-body interface), no
 * allocation anywhere; every member function is noexcept and may run in a
 * frame. `status` carries tasks::mechanics::RimStatus as its integer value
 * (0 ok, 1 singular_interface, 2 singular_mass, 3 non_finite); coupling does
 * not link the tasks layer.
 *
 * Flat layout, flat_size(ni) = 4 + ni^2 + 4 ni doubles:
 *   [0] tag (simulation seconds at which the model holds)
 *   [1] ni   [2] status   [3] condition of G (>= 1, or +inf)
 *   then M_eff row-major (ni^2), lambda~ (ni), z_i (ni), w_i (ni), x_i (ni).
 * The interface position x_i lets the receiver hold the two bodies'
 * interfaces together at position level (docs/rim.md, drift).
 */
struct RimPayload {
  static constexpr std::size_t kMaxInterfaceDims = 6;
  static constexpr std::size_t kHeader = 4;

  double tag = 0.0;
  std::size_t dims = 0;
  std::uint8_t status = 0;
  double condition = 1.0;
  std::array<double, kMaxInterfaceDims * kMaxInterfaceDims> m_eff{};  // row-major, dims x dims
  std::array<double, kMaxInterfaceDims> lambda_tilde{};
  std::array<double, kMaxInterfaceDims> z{};
  std::array<double, kMaxInterfaceDims> velocity{};  // w_i at `tag`
  std::array<double, kMaxInterfaceDims> position{};  // x_i at `tag`

  [[nodiscard]] static constexpr std::size_t flat_size(std::size_t ni) noexcept { return kHeader + ni * ni + 4 * ni; }
  [[nodiscard]] double& m(std::size_t row, std::size_t col) noexcept { return m_eff[row * dims + col]; }
  [[nodiscard]] double m(std::size_t row, std::size_t col) const noexcept { return m_eff[row * dims + col]; }

  // Doubles written, or 0 when `out` is shorter than flat_size(dims) or
  // dims is not in [1, kMaxInterfaceDims].
  std::size_t pack(std::span<double> out) const noexcept;
};

enum class RimUnpackError { kNone, kTooShort, kBadDimension, kBadStatus, kNonFinite, kBadCondition };
std::string_view rim_unpack_error_text(RimUnpackError error) noexcept;

// Reads a payload packed by RimPayload::pack. On an error `out` is left in
// an unspecified but finite state and must not be used.
RimUnpackError unpack_rim_payload(std::span<const double> in, RimPayload& out) noexcept;

}  // namespace rtcosim::interface
