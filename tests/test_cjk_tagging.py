"""Entity tagging on Chinese and Korean text written without spaces between words, from the file to the served
model: KLUE-NER's character-per-line files and UNER Chinese's word-segmented ones train, evaluate and predict;
entities are found inside unsegmented runs (`<서울:LC>에서`, `北京` in `我住在北京`) and scored as character spans
(KLUE's own entity and character F1 too); and what the tool writes is what serving returns, on every sentence of
the staged UNER Chinese test set and KLUE-NER dev split."""

import json

import numpy as np
import pytest

from albert_tf.albert_config import AlbertConfig
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.models.model_io import write_model_dir
from albert_tf.tasks.tagged_texts import read_tagged_file, sentence_text
from albert_tf.tasks.tagging_task import TaggingConfig, TaggingTask
from albert_tf.text.albert_preprocessor import AlbertPreprocessor
from albert_tf.training.finetuning_config import FinetuningConfig
from albert_tf.training.finetuning_tool import run_finetuning

SEQ = 64
TYPES = ("DT", "LC", "LOC", "OG", "ORG", "PER", "PS", "QT", "TI")
LABELS = ["O", *(f"{prefix}-{name}" for name in TYPES for prefix in "BI")]
# KLUE-NER's layout: header comments, `## id<TAB>annotated sentence`, a character a line with spaces as tokens.
KLUE_SENTENCES = [("서울에서 김철수를 만났다.", [("LC", 0, 2), ("PS", 5, 8)]),
                  ("2019년 3월 부산에 갔다.", [("DT", 0, 9), ("LC", 10, 12)])]


def write_klue(path, sentences):
    lines = ["## 토큰, 레이블 구분자 : \t", "## 레이블 체계 : CHAR\tNE_TAG", ""]
    for number, (text, entities) in enumerate(sentences):
        tags = ["O"] * len(text)
        for entity_type, start, end in entities:
            tags[start:end] = [f"B-{entity_type}"] + [f"I-{entity_type}"] * (end - start - 1)
        lines += [f"## klue-ner-test_{number:05d}\t{text}", *(f"{c}\t{t}" for c, t in zip(text, tags)), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def cjk_tagger(directory, texts, vocab_size=800, seed=3):
    """A tiny token classifier with a random head over a vocabulary trained on `texts` (written in `directory`):
    tags change from unit to unit, O for about half of them."""
    import keras

    from albert_tf.data.vocabulary import train

    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    train([str(corpus)], str(directory / "spm"), vocab_size=vocab_size, hard_vocab_limit=False, num_threads=1,
          lower_case=False)
    keras.utils.set_random_seed(seed)
    proto = (directory / "spm.model").read_bytes()
    config = AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=SEQ)
    model = AlbertTokenClassifier(config, labels=LABELS, preprocessor=AlbertPreprocessor(
        proto, seq_length=SEQ, lower_case=False))
    kernel, _ = model.classifier.get_weights()
    model.classifier.set_weights([20 * kernel, np.array([5.0] + [0.0] * (len(LABELS) - 1), np.float32)])
    return write_model_dir(model, str(directory / "model"), lower_case=False, max_seq_length=SEQ)


def predict_file(model_dir, path, output_dir):
    """run_tagger --do_predict on `path` with a fine-tuned tagger: (eval_results, the entities file's rows)."""
    config = FinetuningConfig(output_dir=str(output_dir), init_checkpoint=model_dir, do_predict=True,
                              max_seq_length=SEQ, predict_batch_size=64, task=TaggingConfig(predict_file=path))
    run_finetuning(TaggingTask(), config)
    rows = [json.loads(line) for line in (output_dir / "predictions.entities.jsonl").read_text().splitlines()]
    results = json.loads((output_dir / "eval_results.json").read_text())["predict"]
    return results, rows


def spans(entities):
    return [(entity["type"], entity["start"], entity["end"]) for entity in entities]


def test_klue_files_train_and_score_entities_inside_words_with_klue_metrics(tmp_path):
    path = write_klue(tmp_path / "klue.tsv", KLUE_SENTENCES * 4)
    model_dir = cjk_tagger(tmp_path, [text for text, _ in KLUE_SENTENCES])
    config = FinetuningConfig(output_dir=str(tmp_path / "out"), init_checkpoint=model_dir, do_train=True,
                              do_eval=True, num_train_steps=2, max_seq_length=SEQ, train_batch_size=8,
                              eval_batch_size=16, learning_rate=1e-3, iterations_per_loop=1,
                              task=TaggingConfig(train_file=path, eval_file=path))
    run_finetuning(TaggingTask(), config)
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert results["entities"] == 16 and results["sentences"] == 8
    assert 0 <= results["klue_entity_macro_f1"] <= 1 and 0 <= results["klue_char_macro_f1"] <= 1
    rows = [json.loads(line) for line in (tmp_path / "out" / "eval_predictions.entities.jsonl").read_text()
            .splitlines()]
    assert [row["text"] for row in rows] == [text for text, _ in KLUE_SENTENCES * 4]
    # The file comes back a character a line, spaces too, with the predicted tag added.
    written = (tmp_path / "out" / "eval_predictions.tsv").read_text(encoding="utf-8").splitlines()
    assert written[4].startswith("서\t") and written[4].count("\t") == 2 and written[8] in (" \tO\tO",)


def test_a_gold_entity_inside_a_word_is_learned_at_its_own_pieces(tmp_path):
    """`서울` of `서울에서` is its own unit, tagged B-LC, its particle O: training targets say the entity exactly."""
    from albert_tf.text.albert_tokenizer import AlbertTokenizer
    from albert_tf.text.entities import text_units, unit_tags

    cjk_tagger(tmp_path, [text for text, _ in KLUE_SENTENCES] * 20)
    tokenizer = AlbertTokenizer(str(tmp_path / "spm.model"), lower_case=False)
    units = text_units(tokenizer, KLUE_SENTENCES[0][0])
    tags, inexact = unit_tags(units, KLUE_SENTENCES[0][1], {name: index for index, name in enumerate(LABELS)})
    tagged = [(KLUE_SENTENCES[0][0][start:end], LABELS[tag]) for (start, end), tag in zip(units.spans(), tags)
              if LABELS[tag] != "O"]
    assert inexact == []
    assert "".join(text for text, tag in tagged if tag.endswith("-LC")) == "서울" and tagged[0][1] == "B-LC"
    assert "".join(text for text, tag in tagged if tag.endswith("-PS")) == "김철수"


@pytest.mark.slow
def test_served_entities_are_the_tools_predicted_entities_on_the_staged_sets(shared_data, tmp_path):
    from albert_tf import load_export
    from albert_tf.export_lib.exporter import export

    files = [str(shared_data / "ner_uner_zh_gsdsimp" / "zh_gsdsimp-ud-test.iob2"),
             str(shared_data / "klue" / "klue-ner-v1.1_dev.tsv")]
    texts = [sentence_text(sentence)[0] for path in files for sentence in read_tagged_file(path).sentences]
    model_dir = cjk_tagger(tmp_path, texts, vocab_size=5000)
    root = tmp_path / "export"
    export(model_dir, str(root), serving_name="ner", serving_max_batch_size=64)
    loaded = load_export(root)
    for number, path in enumerate(files):
        results, rows = predict_file(model_dir, path, tmp_path / f"out{number}")
        assert len(rows) == results["sentences"] == len(read_tagged_file(path).sentences)
        served = loaded([row["text"] for row in rows])
        assert [spans(entities) for entities in served] == [spans(row["entities"]) for row in rows], path
        found = [(row["text"], entity) for row in rows for entity in row["entities"]]
        # Entities inside unsegmented runs: neither end at a space or the text's edge.
        assert sum(0 < entity["start"] and entity["end"] < len(text) and not text[entity["start"] - 1].isspace()
                   and not text[entity["end"]].isspace() for text, entity in found) > 100
        assert all(text[entity["start"]:entity["end"]] == entity["text"] for text, entity in found)
        assert ("klue_char_macro_f1" in results) == path.endswith(".tsv")

