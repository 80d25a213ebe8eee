#!/usr/bin/env bash
# Makes what `dds: security` needs (docs/dds.md, "Security") for the hosts
# of a task graph: an identity CA (also the permissions CA), one identity
# certificate and private key per host, a governance document and a
# permissions document, both S/MIME-signed by the CA, as Cyclone DDS's
# plugins read them. The permissions bind each host to its certificate:
# its subject may publish the start topic of its own host only
# (rtcosim_*__start/HOST), and every other rtcosim_* topic.
#
#   scripts/dds-security-docs.sh [-p encrypt|sign|none] [-d DAYS] OUTDIR HOST...
#
# -p: what the governance asks for the rtcosim_* topics (default encrypt:
#     discovery, liveliness, messages and data encrypted; sign: signed
#     only; none: authentication and access control only). OUTDIR gets
#     ca.pem (give it as identity_ca), ca_key.pem (keep it off the hosts),
#     governance.p7s, permissions.p7s and HOST/cert.pem, HOST/key.pem per
#     host. Copy to each host ca.pem, governance.p7s, permissions.p7s and
#     its own directory only. Needs openssl.
set -euo pipefail
protect=encrypt
days=3650
while getopts "p:d:h" opt; do
  case "$opt" in
    p) protect=$OPTARG ;;
    d) days=$OPTARG ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [[ $# -lt 2 ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
case "$protect" in
  encrypt) rtps=ENCRYPT meta=ENCRYPT data=ENCRYPT ;;
  sign) rtps=SIGN meta=SIGN data=SIGN ;;
  none) rtps=NONE meta=NONE data=NONE ;;
  *) echo "dds-security-docs: -p '$protect' — expected encrypt, sign or none" >&2; exit 2 ;;
esac
out=$1
shift
mkdir -p "$out"
cd "$out"
umask 077
quiet() { "$@" 2>/dev/null >/dev/null || { echo "dds-security-docs: failed: $*" >&2; exit 1; }; }
# A host's part of its start topic, as io/dds_bridge.cpp writes it
# (dds_host_start_topic_name): every byte outside [A-Za-z0-9] as _xx.
topic_host() {
  local LC_ALL=C
  local s=$1 out='' c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [[ $c == [A-Za-z0-9] ]]; then out+=$c; else out+=$(printf '_%02x' "'$c"); fi
  done
  printf '%s' "$out"
}

quiet openssl genrsa -out ca_key.pem 2048
quiet openssl req -x509 -new -key ca_key.pem -out ca.pem -days "$days" -sha256 -subj "/O=rtcosim/CN=rtcosim CA"
subjects=()
for host in "$@"; do
  mkdir -p "$host"
  quiet openssl genrsa -out "$host/key.pem" 2048
  quiet openssl req -new -key "$host/key.pem" -out "$host/req.csr" -subj "/O=rtcosim/CN=$host"
  quiet openssl x509 -req -in "$host/req.csr" -CA ca.pem -CAkey ca_key.pem -CAcreateserial -days "$days" -sha256 \
    -out "$host/cert.pem"
  rm -f "$host/req.csr"
  # The permissions name a subject exactly as RFC 2253 prints it, no spaces.
  subjects+=("$(openssl x509 -noout -subject -nameopt RFC2253 -in "$host/cert.pem" | sed 's/^subject=//')")
done

# Domains 0..230: Cyclone DDS 0.10 reads no governance beyond 230.
cat >governance.xml <<EOF
<?xml version="1.0" encoding="utf-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains><id_range><min>0</min><max>230</max></id_range></domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
      <rtps_protection_kind>$rtps</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>rtcosim_*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>$meta</metadata_protection_kind>
          <data_protection_kind>$data</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
EOF

# From a day ago: a host whose clock is a little behind must not find them "not yet valid".
now=$(date -u -d "-1 day" +%Y-%m-%dT%H:%M:%S)
until=$(date -u -d "+$days days" +%Y-%m-%dT%H:%M:%S)
{
  echo '<?xml version="1.0" encoding="utf-8"?>'
  echo '<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
  echo '     xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">'
  echo '  <permissions>'
  # Per host, in this order (Cyclone's access control takes the first rule
  # whose topic matches): its own start topic and every topic to read; no
  # other host's start topic to write (a host's name is only as good as
  # this: it is what makes an announce on host X's topic come from X's
  # certificate); every other rtcosim_* topic to write. Topic names hold no
  # '/' but the start topics' one, so the deny touches no link topic.
  i=0
  hosts=("$@")
  for subject in "${subjects[@]}"; do
    own=$(topic_host "${hosts[$i]}")
    cat <<EOF
    <grant name="host_$i">
      <subject_name>$subject</subject_name>
      <validity><not_before>$now</not_before><not_after>$until</not_after></validity>
      <allow_rule>
        <domains><id_range><min>0</min><max>230</max></id_range></domains>
        <publish><topics><topic>rtcosim_*__start/$own</topic></topics><partitions><partition>*</partition></partitions></publish>
        <subscribe><topics><topic>rtcosim_*</topic></topics><partitions><partition>*</partition></partitions></subscribe>
      </allow_rule>
      <deny_rule>
        <domains><id_range><min>0</min><max>230</max></id_range></domains>
        <publish><topics><topic>rtcosim_*__start/*</topic></topics><partitions><partition>*</partition></partitions></publish>
      </deny_rule>
      <allow_rule>
        <domains><id_range><min>0</min><max>230</max></id_range></domains>
        <publish><topics><topic>rtcosim_*</topic></topics><partitions><partition>*</partition></partitions></publish>
      </allow_rule>
      <default>DENY</default>
    </grant>
EOF
    i=$((i + 1))
  done
  echo '  </permissions>'
  echo '</dds>'
} >permissions.xml

# Clear-signed S/MIME with -text: what the access-control plugin verifies.
quiet openssl smime -sign -in governance.xml -text -out governance.p7s -signer ca.pem -inkey ca_key.pem
quiet openssl smime -sign -in permissions.xml -text -out permissions.p7s -signer ca.pem -inkey ca_key.pem
chmod 644 ca.pem governance.p7s permissions.p7s governance.xml permissions.xml
for host in "$@"; do chmod 644 "$host/cert.pem"; done
echo "dds-security-docs: $out: ca.pem, governance.p7s ($protect), permissions.p7s; $(printf '%s/{cert,key}.pem ' "$@")"
