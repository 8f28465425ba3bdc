//! The operator registry: every operator by name, with its category,
//! description and parameters, so scenarios, the runtime and the CLI can list
//! and build them.

use crate::aead::{GcmDecrypt, GcmEncrypt, InbandGcm, INBAND_GCM_PARAMS};
use crate::checksum::{Adler32, CrcOp, InetChecksum};
use crate::cipher::{AesCtr, AesXts, CTR_PARAMS, XTS_PARAMS};
use crate::compress::{Codec, Compress, Decompress};
use crate::erasure::{EcEncode, EcRecover};
use crate::hash::HashOp;
use crate::limits::MAX_OUTPUT_PARAM;
use crate::operator::{OpError, Operator};
use crate::scan::RegexScan;
use crate::sign::{Scheme, Sign, Verify, SIGN_PARAMS, VERIFY_PARAMS};
use crate::zlib_stream::{ZlibCompress, ZlibDecompress, COMPRESS_FORMAT, DECOMPRESS_FORMAT};
use isola_core::params::{ParamSpec, Params};
use std::collections::BTreeMap;

/// Builds an operator from checked parameters.
pub type BuildOperator = fn(&Params<'_>) -> Result<Box<dyn Operator>, OpError>;

/// A registered operator.
#[derive(Clone, Copy)]
pub struct OperatorInfo {
    /// Name used by tasks, scenarios and the CLI.
    pub name: &'static str,
    /// DPUBench's category: network, storage or security; the papers'
    /// applications add compute (analytics and the compute-bound kernels).
    pub category: &'static str,
    /// One line on what it computes and what it outputs.
    pub description: &'static str,
    /// Whether it can run as subtasks and be reassembled.
    pub splittable: bool,
    /// The operator that undoes it (a compressor's decompressor). A split
    /// run of an operator with an inverse gives an equivalent stream (same
    /// content once inverted); without one, the identical output.
    pub inverse: Option<&'static str>,
    /// Parameters it accepts.
    pub params: &'static [ParamSpec],
    /// Constructor.
    pub build: BuildOperator,
}

impl std::fmt::Debug for OperatorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorInfo")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Registry entry for an operator that takes no parameters.
macro_rules! plain {
    ($name:literal, $category:literal, $description:literal, $op:expr) => {
        OperatorInfo {
            name: $name,
            category: $category,
            description: $description,
            splittable: true,
            inverse: None,
            params: &[],
            build: |_| Ok(Box::new($op)),
        }
    };
}

/// Registry entry for a compressor of `codec`.
macro_rules! compressor {
    ($name:literal, $inverse:literal, $what:literal, $codec:expr, $split:expr, $params:expr) => {
        OperatorInfo {
            name: $name,
            category: "storage",
            description: concat!("compress: ", $what),
            splittable: $split,
            inverse: Some($inverse),
            params: $params,
            build: |p| Compress::build($name, $codec, p),
        }
    };
}

/// Registry entry for a decompressor of `codec`.
macro_rules! decompressor {
    ($name:literal, $what:literal, $codec:expr) => {
        OperatorInfo {
            name: $name,
            category: "storage",
            description: concat!(
                "decompress: ",
                $what,
                "; corrupt input, junk after it, or output over `max_output` is an error"
            ),
            splittable: false,
            inverse: None,
            params: &[MAX_OUTPUT_PARAM],
            build: |p| Decompress::build($name, $codec, p),
        }
    };
}

const NO_LEVEL: &[ParamSpec] = &[];
const EC_K: ParamSpec = ParamSpec {
    name: "k",
    default: "",
    description: "data shards, 1 to 128",
};
const EC_M: ParamSpec = ParamSpec {
    name: "m",
    default: "",
    description: "parity shards, 1 to 32",
};
const EC_SHARD: ParamSpec = ParamSpec {
    name: "shard-size",
    default: "auto",
    description: "bytes per shard (KiB, MiB suffixes allowed): the input must be exactly that many \
                  shards of it; auto: any equal shards",
};
const GCM_KEY: ParamSpec = ParamSpec {
    name: "key",
    default: "",
    description: "AES key, hex, 16 or 32 bytes (AES-128 or AES-256)",
};
const GCM_IV: ParamSpec = ParamSpec {
    name: "iv",
    default: "",
    description: "IV, hex, 12 bytes",
};
const GCM_AAD: ParamSpec = ParamSpec {
    name: "aad",
    default: "",
    description: "additional authenticated data, hex (default none)",
};
const GCM_PARAMS: &[ParamSpec] = &[GCM_KEY, GCM_IV, GCM_AAD];
const GCM_ENCRYPT_PARAMS: &[ParamSpec] = &[
    GCM_KEY,
    GCM_IV,
    GCM_AAD,
    ParamSpec {
        name: "split",
        default: "chained",
        description: "subtasks: chained (in order, fused AES-GCM on each) or independent (any order; CTR offsets and GHASH partials combined)",
    },
];
const LEVEL_0_9: &[ParamSpec] = &[ParamSpec {
    name: "level",
    default: "6",
    description: "compression level, 0 (store) to 9 (smallest)",
}];
const LEVEL_ZSTD: &[ParamSpec] = &[ParamSpec {
    name: "level",
    default: "3",
    description: "compression level, 1 (fastest) to 19 (smallest)",
}];

const ROUTES: ParamSpec = ParamSpec {
    name: "routes",
    default: "",
    description: "route file, `prefix/len next_hop` lines, `#` comments (default: random routes)",
};
const RANDOM_ROUTES: ParamSpec = ParamSpec {
    name: "random-routes",
    default: "10000",
    description: "random routes (Internet-like prefix lengths, no default route) without `routes`, \
                  0 to 2000000",
};
const ROUTE_SEED: ParamSpec = ParamSpec {
    name: "seed",
    default: "1",
    description: "seed of the random routes",
};

/// Every registered operator, in the order `isola op --list` shows them.
pub static OPERATORS: &[OperatorInfo] = &[
    plain!(
        "crc32",
        "network",
        "CRC-32/ISO-HDLC (Ethernet, zlib); outputs 4 bytes, big-endian",
        CrcOp::CRC32
    ),
    plain!(
        "crc32c",
        "network",
        "CRC-32C/Castagnoli (iSCSI, NVMe); outputs 4 bytes, big-endian",
        CrcOp::CRC32C
    ),
    plain!(
        "adler32",
        "network",
        "Adler-32 (RFC 1950, zlib's) from 1; outputs 4 bytes, big-endian",
        Adler32
    ),
    plain!(
        "inet-checksum",
        "network",
        "Internet checksum (RFC 1071); outputs 2 bytes, big-endian",
        InetChecksum
    ),
    OperatorInfo {
        name: "lpm",
        category: "network",
        description: "longest-prefix match of IPv4/IPv6 addresses (4/16 bytes each); outputs each next hop, \
                      4 bytes big-endian (ffffffff: no route)",
        splittable: true,
        inverse: None,
        params: &[
            ParamSpec {
                name: "family",
                default: "ipv4",
                description: "address family: ipv4 or ipv6",
            },
            ROUTES,
            RANDOM_ROUTES,
            ROUTE_SEED,
        ],
        build: crate::lpm::Lpm::build,
    },
    OperatorInfo {
        name: "ip-fragment",
        category: "network",
        description: "IPv4 fragmentation (RFC 791) of IPv4 packets back to back; outputs the fragments back to back",
        splittable: false,
        inverse: None,
        params: &[
            ParamSpec {
                name: "mtu",
                default: "1500",
                description: "largest fragment in bytes, 68 to 65535",
            },
            MAX_OUTPUT_PARAM,
        ],
        build: crate::packet::IpFragment::build,
    },
    OperatorInfo {
        name: "tcp-segment",
        category: "network",
        description: "TCP segmentation offload of IPv4+TCP packets back to back; outputs the segments back to back",
        splittable: false,
        inverse: None,
        params: &[
            ParamSpec {
                name: "mss",
                default: "1460",
                description: "largest segment payload in bytes, 1 to 65495",
            },
            MAX_OUTPUT_PARAM,
        ],
        build: crate::packet::TcpSegment::build,
    },
    OperatorInfo {
        name: "toeplitz",
        category: "network",
        description: "RSS Toeplitz hash of flow tuples back to back; outputs 4 bytes, big-endian, per tuple",
        splittable: true,
        inverse: None,
        params: &[
            ParamSpec {
                name: "key",
                default: crate::toeplitz::DEFAULT_KEY,
                description: "hash key, hex, at least tuple size + 4 bytes (default: Microsoft's 40-byte key)",
            },
            ParamSpec {
                name: "tuple",
                default: "ipv4-4",
                description: "record: ipv4-2 (addresses, 8 bytes), ipv4-4 (and ports, 12), ipv6-2 (32), ipv6-4 (36)",
            },
        ],
        build: crate::toeplitz::Toeplitz::build,
    },
    OperatorInfo {
        name: "ec-encode",
        category: "storage",
        description: "Reed-Solomon encode: k equal data shards in, m parity shards out (GF(2^8))",
        splittable: true,
        inverse: None,
        params: &[EC_K, EC_M, EC_SHARD],
        build: EcEncode::build,
    },
    OperatorInfo {
        name: "ec-recover",
        category: "storage",
        description: "Reed-Solomon recover: all k + m shards in (lost ones ignored), the k data shards out",
        splittable: false,
        inverse: None,
        params: &[
            EC_K,
            EC_M,
            EC_SHARD,
            ParamSpec {
                name: "lost",
                default: "",
                description: "comma-separated indices of lost shards (data first, from 0), at most m",
            },
        ],
        build: EcRecover::build,
    },
    compressor!(
        "deflate",
        "inflate",
        "raw deflate (RFC 1951); splits as pigz does (pieces sync-flushed, one stream)",
        Codec::Deflate,
        true,
        LEVEL_0_9
    ),
    decompressor!("inflate", "raw deflate (RFC 1951)", Codec::Deflate),
    compressor!(
        "huffman",
        "inflate",
        "Huffman-only raw deflate (RFC 1951 blocks without LZ77 matches)",
        Codec::Huffman,
        false,
        NO_LEVEL
    ),
    compressor!(
        "gzip",
        "gunzip",
        "gzip members (RFC 1952); splits into concatenated members",
        Codec::Gzip,
        true,
        LEVEL_0_9
    ),
    decompressor!(
        "gunzip",
        "gzip (RFC 1952), concatenated members included",
        Codec::Gzip
    ),
    compressor!(
        "lz4",
        "unlz4",
        "LZ4 frame format; splits into concatenated frames",
        Codec::Lz4,
        true,
        NO_LEVEL
    ),
    decompressor!(
        "unlz4",
        "LZ4 frame format, concatenated frames included",
        Codec::Lz4
    ),
    compressor!(
        "zstd",
        "unzstd",
        "Zstandard frames; splits into concatenated frames",
        Codec::Zstd,
        true,
        LEVEL_ZSTD
    ),
    decompressor!("unzstd", "Zstandard, concatenated frames included", Codec::Zstd),
    compressor!(
        "snappy",
        "unsnappy",
        "Snappy framing format; splits into concatenated streams",
        Codec::Snappy,
        true,
        NO_LEVEL
    ),
    decompressor!("unsnappy", "Snappy framing format", Codec::Snappy),
    OperatorInfo {
        name: "zlib-compress",
        category: "storage",
        description: "compress: one zlib, gzip or raw deflate stream, as zlib's deflate(Z_FINISH) makes it",
        splittable: false,
        inverse: Some("zlib-decompress"),
        params: &[COMPRESS_FORMAT, LEVEL_0_9[0]],
        build: ZlibCompress::build,
    },
    OperatorInfo {
        name: "zlib-decompress",
        category: "storage",
        description: "decompress: exactly one zlib, gzip or raw deflate stream, as zlib's inflate(Z_FINISH) \
                      reads it; anything after it, a cut or a bad checksum is an error",
        splittable: false,
        inverse: None,
        params: &[DECOMPRESS_FORMAT, MAX_OUTPUT_PARAM],
        build: ZlibDecompress::build,
    },
    OperatorInfo {
        name: "aes-gcm-encrypt",
        category: "security",
        description: "AES-GCM encrypt (SP 800-38D); outputs ciphertext then the 16-byte tag",
        splittable: true,
        inverse: None,
        params: GCM_ENCRYPT_PARAMS,
        build: GcmEncrypt::build,
    },
    OperatorInfo {
        name: "aes-gcm-decrypt",
        category: "security",
        description: "AES-GCM decrypt of ciphertext then tag; a tag that does not authenticate is an error",
        splittable: false,
        inverse: None,
        params: GCM_PARAMS,
        build: GcmDecrypt::build,
    },
    OperatorInfo {
        name: "aes-gcm",
        category: "security",
        description: "AES-GCM as OpenSSL's EVP calls it: key, IV and AAD in each task's input \
                      (key length byte, key, 12-byte IV, AAD length u32 BE, AAD, data); outputs the \
                      data transformed, then the tag over the ciphertext (decrypt: the caller compares)",
        splittable: false,
        inverse: None,
        params: INBAND_GCM_PARAMS,
        build: InbandGcm::build,
    },
    plain!(
        "md5",
        "security",
        "MD5 digest (RFC 1321); outputs 16 bytes",
        HashOp::<md5::Md5>::new("md5")
    ),
    plain!(
        "sha1",
        "security",
        "SHA-1 digest (FIPS 180-4); outputs 20 bytes",
        HashOp::<sha1::Sha1>::new("sha1")
    ),
    plain!(
        "sha256",
        "security",
        "SHA-256 digest (FIPS 180-4); outputs 32 bytes",
        HashOp::<sha2::Sha256>::new("sha256")
    ),
    plain!(
        "sha3-256",
        "security",
        "SHA3-256 digest (FIPS 202); outputs 32 bytes",
        HashOp::<sha3::Sha3_256>::new("sha3-256")
    ),
    OperatorInfo {
        name: "aes-ctr",
        category: "security",
        description: "AES-CTR (SP 800-38A) from the 16-byte counter block `iv` (128-bit increment); its own inverse",
        splittable: true,
        inverse: Some("aes-ctr"),
        params: CTR_PARAMS,
        build: AesCtr::build,
    },
    OperatorInfo {
        name: "aes-xts",
        category: "security",
        description: "AES-XTS (IEEE 1619) of sectors back to back (last one short, >= 16 bytes: ciphertext stealing)",
        splittable: true,
        inverse: None,
        params: XTS_PARAMS,
        build: AesXts::build,
    },
    OperatorInfo {
        name: "rsa-sign",
        category: "security",
        description: "RSA PKCS#1 v1.5 signature with SHA-256 (RSA-2048 demo key); outputs the modulus-sized signature",
        splittable: false,
        inverse: None,
        params: SIGN_PARAMS,
        build: |p| Sign::build(Scheme::Rsa, p),
    },
    OperatorInfo {
        name: "rsa-verify",
        category: "security",
        description: "RSA PKCS#1 v1.5 / SHA-256 verify of signature then message; empty output, or an error",
        splittable: false,
        inverse: None,
        params: VERIFY_PARAMS,
        build: |p| Verify::build(Scheme::Rsa, p),
    },
    OperatorInfo {
        name: "ecdsa-sign",
        category: "security",
        description: "ECDSA P-256 signature with SHA-256; outputs the DER signature (as `openssl dgst -sign`)",
        splittable: false,
        inverse: None,
        params: SIGN_PARAMS,
        build: |p| Sign::build(Scheme::Ecdsa, p),
    },
    OperatorInfo {
        name: "ecdsa-verify",
        category: "security",
        description: "ECDSA P-256 / SHA-256 verify of DER signature then message; empty output, or an error",
        splittable: false,
        inverse: None,
        params: VERIFY_PARAMS,
        build: |p| Verify::build(Scheme::Ecdsa, p),
    },
    OperatorInfo {
        name: "dsa-sign",
        category: "security",
        description: "DSA signature with SHA-256 (2048/256-bit demo key, RFC 6979 nonce); outputs the DER signature",
        splittable: false,
        inverse: None,
        params: SIGN_PARAMS,
        build: |p| Sign::build(Scheme::Dsa, p),
    },
    OperatorInfo {
        name: "dsa-verify",
        category: "security",
        description: "DSA / SHA-256 verify of DER signature then message; empty output, or an error",
        splittable: false,
        inverse: None,
        params: VERIFY_PARAMS,
        build: |p| Verify::build(Scheme::Dsa, p),
    },
    OperatorInfo {
        name: "regex",
        category: "security",
        description: "multi-pattern regex scan (leftmost-first, non-overlapping); one line `start end pattern` per match",
        splittable: false,
        inverse: None,
        params: crate::scan::SCAN_PARAMS,
        build: RegexScan::build,
    },
    // MTDA's tenant applications (docs/operators.md, "Applications").
    OperatorInfo {
        name: "analytics",
        category: "compute",
        description: "real-time analytics: per key and tumbling window, count/sum/min/max of the \
                      16-byte records (key, timestamp, value) in a batch of IPv4 packets; 32-byte rows",
        splittable: true,
        inverse: None,
        params: &[ParamSpec {
            name: "window",
            default: "100000",
            description: "tumbling window in microseconds, 1 to 86400000000 (a day)",
        }],
        build: crate::apps::analytics::Analytics::build,
    },
    OperatorInfo {
        name: "flow-monitor",
        category: "network",
        description: "5-tuple flow table of a batch of IPv4 packets with packet and byte counters; \
                      32-byte rows sorted by 5-tuple",
        splittable: true,
        inverse: None,
        params: &[],
        build: crate::apps::flow::FlowMonitor::build,
    },
    OperatorInfo {
        name: "ipv4-router",
        category: "network",
        description: "IPv4 forwarding of a batch of packets: LPM next hop, TTL decrement (drop at TTL <= 1 \
                      or no route), RFC 1624 checksum update; outputs next hop (u32) then packet, each",
        splittable: true,
        inverse: None,
        params: &[ROUTES, RANDOM_ROUTES, ROUTE_SEED],
        build: crate::apps::router::Router::build,
    },
    OperatorInfo {
        name: "firewall",
        category: "network",
        description: "ordered 5-tuple rules (prefixes, port ranges; first match wins) over a batch of \
                      IPv4 packets; outputs the allowed packets or a verdict byte per packet",
        splittable: true,
        inverse: None,
        params: &[
            ParamSpec {
                name: "rules",
                default: "",
                description: "rule file, `allow|deny SRC DST SPORTS DPORTS PROTO` lines, `#` comments \
                              (default: random rules)",
            },
            ParamSpec {
                name: "random-rules",
                default: "256",
                description: "random rules (ClassBench-like firewall set) without `rules`, 0 to 1000000",
            },
            ParamSpec {
                name: "seed",
                default: "1",
                description: "seed of the random rules",
            },
            ParamSpec {
                name: "default",
                default: "deny",
                description: "action when no rule matches: deny or allow",
            },
            ParamSpec {
                name: "output",
                default: "packets",
                description: "packets (the allowed ones, back to back) or verdicts (1 allow, 0 deny, a byte each)",
            },
        ],
        build: crate::apps::firewall::Firewall::build,
    },
    // OSMOSIS' datacenter kernels (the PsPIN benchmark handlers).
    OperatorInfo {
        name: "aggregate",
        category: "compute",
        description: "sum of the 32-bit words of a batch of IPv4 packets' payloads; outputs sum and \
                      word count, u64 big-endian each",
        splittable: true,
        inverse: None,
        params: &[],
        build: crate::apps::kernels::Aggregate::build,
    },
    OperatorInfo {
        name: "reduce",
        category: "compute",
        description: "element-wise (wrapping) sum of the i32 vectors a batch of IPv4 packets carries; \
                      outputs the sum vector, i32 big-endian each",
        splittable: true,
        inverse: None,
        params: &[],
        build: crate::apps::kernels::Reduce::build,
    },
    OperatorInfo {
        name: "histogram",
        category: "compute",
        description: "counts of the 32-bit words of a batch of IPv4 packets' payloads in equal-width \
                      bins; outputs a u64 count per bin",
        splittable: true,
        inverse: None,
        params: &[ParamSpec {
            name: "bins",
            default: "1024",
            description: "bins over 0..2^32, 1 to 1048576",
        }],
        build: crate::apps::kernels::Histogram::build,
    },
    OperatorInfo {
        name: "io-read",
        category: "storage",
        description: "read requests (address, length) in a batch of IPv4 packets, answered from host \
                      memory with UDP packets back to the requesters",
        splittable: true,
        inverse: None,
        params: &[
            ParamSpec {
                name: "memory",
                default: "",
                description: "file holding the host memory (default: `memory-size` random bytes)",
            },
            ParamSpec {
                name: "memory-size",
                default: "1048576",
                description: "host memory in bytes without `memory`, 1 to 1073741824",
            },
            ParamSpec {
                name: "seed",
                default: "1",
                description: "seed of the random host memory",
            },
            MAX_OUTPUT_PARAM,
        ],
        build: crate::apps::io::IoRead::build,
    },
    OperatorInfo {
        name: "io-write",
        category: "storage",
        description: "writes the payloads of a batch of IPv4 packets into host memory at the addresses \
                      they carry; outputs the memory up to the highest write",
        splittable: false,
        inverse: None,
        params: &[ParamSpec {
            name: "memory-size",
            default: "67108864",
            description: "host memory (the writable region) in bytes, 1 to 1073741824",
        }],
        build: crate::apps::io::IoWrite::build,
    },
    OperatorInfo {
        name: "filter",
        category: "network",
        description: "keeps the IPv4 packets whose L7 key (first payload bytes) is in a hashed key table \
                      (Jenkins hash, as PsPIN's filtering kernel)",
        splittable: true,
        inverse: None,
        params: &[
            ParamSpec {
                name: "keys",
                default: "",
                description: "key file, one hex key a line, `#` comments (default: random keys)",
            },
            ParamSpec {
                name: "random-keys",
                default: "1024",
                description: "random keys without `keys`, 0 to 4194304",
            },
            ParamSpec {
                name: "seed",
                default: "1",
                description: "seed of the random keys",
            },
            ParamSpec {
                name: "key-bytes",
                default: "8",
                description: "key length in bytes, 1 to 64",
            },
        ],
        build: crate::apps::filter::Filter::build,
    },
    // DPUBench's end-to-end programs, as packet kernels that keep state.
    OperatorInfo {
        name: "flow-table",
        category: "network",
        description: "bounded 5-tuple flow table kept across packets (DPUBench's flow-table program); per IPv4 packet: the flow's packets and bytes (u64 each) and the table's entries (u32)",
        splittable: false,
        inverse: None,
        params: crate::apps::flow_table::PARAMS,
        build: crate::apps::flow_table::FlowTableKernel::build,
    },
    OperatorInfo {
        name: "app-recognition",
        category: "security",
        description: "regex rules recognise each IPv4 packet's application (DPUBench's app-recognition \
                      program), whose action answers: hash of the packet, compressed payload, or echo",
        splittable: false,
        inverse: None,
        params: crate::apps::app_recognition::PARAMS,
        build: crate::apps::app_recognition::AppRecognition::build,
    },
];

/// The operator registered as `name`.
pub fn find_operator(name: &str) -> Result<&'static OperatorInfo, OpError> {
    OPERATORS
        .iter()
        .find(|o| o.name == name)
        .ok_or_else(|| OpError::Unknown {
            name: name.into(),
            known: OPERATORS.iter().map(|o| o.name).collect::<Vec<_>>().join(", "),
        })
}

/// Builds operator `name` with `params` (`key -> value`).
pub fn build_operator(name: &str, params: &BTreeMap<String, String>) -> Result<Box<dyn Operator>, OpError> {
    (find_operator(name)?.build)(&checked_params(name, params)?)
}

/// `params` checked against registered operator `name`'s parameters.
pub(crate) fn checked_params<'a>(
    name: &str,
    params: &'a BTreeMap<String, String>,
) -> Result<Params<'a>, OpError> {
    let info = find_operator(name)?;
    Ok(Params::new(
        format!("operator `{}`", info.name),
        info.params,
        params,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample_params;

    #[test]
    fn every_operator_builds_and_says_if_it_splits() {
        for info in OPERATORS {
            let op = build_operator(info.name, &sample_params(info.name)).unwrap();
            assert_eq!(op.name(), info.name);
            assert_eq!(op.splitter().is_some(), info.splittable, "{}", info.name);
        }
        assert!(matches!(
            build_operator("frobnicate", &BTreeMap::new()),
            Err(OpError::Unknown { .. })
        ));
        let mut p = BTreeMap::new();
        p.insert("key".to_string(), "00".to_string());
        let err = build_operator("sha256", &p).err().unwrap();
        assert!(
            err.to_string()
                .contains("operator `sha256` has no parameter `key`"),
            "{err}"
        );
        let err = build_operator("ec-encode", &BTreeMap::new()).err().unwrap();
        assert!(err.to_string().contains("needs parameter `k`"), "{err}");
        let mut p = sample_params("ec-recover");
        p.insert("lost".into(), "0,1,2".into());
        let err = build_operator("ec-recover", &p).err().unwrap();
        assert!(err.to_string().contains("parameter `lost`"), "{err}");
    }
}
