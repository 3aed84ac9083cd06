r"""Fine-tunes ALBERT on SQuAD v1.1 / v2.0 (or CMRC 2018, JSQuAD) and writes predictions in the official format.

  # Train on SQuAD 1.1 from a pretrained (or converted) albert_tf checkpoint, keep the checkpoint with
  # the best dev F1, then answer dev with it
  python -m albert_tf.run_squad --version=1.1 --do_train --do_eval --do_predict \
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/squad11

  # SQuAD 2.0 with the original ALBERT's v2 model: unanswerable questions decided by its answerability
  # logit, at the no-answer threshold with the best F1 on --predict_file; as the original's do_predict,
  # every checkpoint saved (steps 5000 and 5429) is scored on --predict_file and the best answers
  python -m albert_tf.run_squad --version=2.0 --do_train --do_predict \
      --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/squad20

  # SQuAD 2.0 with BERT's head instead: no answer by the [CLS] null score
  python -m albert_tf.run_squad --version=2.0 --squad_v2_head=null_score --do_train --do_predict \
      --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
      --init_checkpoint=/ckpt/albert_base --output_dir=/tmp/squad20_null_score

  # CMRC 2018 (Chinese) or JSQuAD (Japanese): SQuAD 1.1's layout, scored with their own official metric,
  # which --metric=auto (the default) picks from the predict file's contexts
  python -m albert_tf.run_squad --version=1.1 --do_train --do_predict \
      --train_file=cmrc2018_train.json --predict_file=cmrc2018_dev.json \
      --init_checkpoint=/ckpt/albert_base_zh --output_dir=/tmp/cmrc2018

  # Predict only, with a fine-tuned model (OUTPUT_DIR/best or OUTPUT_DIR/checkpoints of a training run)
  python -m albert_tf.run_squad --version=1.1 --do_predict --predict_file=dev-v1.1.json \
      --init_checkpoint=/tmp/squad11/best --output_dir=/tmp/squad11_dev

The defaults are the original recipe (docs/reference.md, "Fine-tuning recipes"): max_seq_length 384,
doc_stride 128, max_query_length 64, batch 48, AdamW with lr 5e-5, 2 epochs of
the training questions (int(questions / 48 * 2) steps), 10% warmup and a linear
decay measured from step 0 (the original's schedule), weight decay 0.01,
gradient norm clipped to 1.0. SQuAD 1.1 fine-tunes BERT's span head, SQuAD 2.0
the original's v2 model (--squad_v2_head).

Writes into --output_dir, as every fine-tuning tool does (albert_tf.training.finetuning_tool):
  checkpoints/ckpt-N       training checkpoints (resumable); the directory is the
                           last fine-tuned model (kind "span_labeler", or for the
                           original v2 head "squad_v2_span_labeler"; with spm.model)
  best/                    with --do_eval (implied by --do_train --do_predict when the
                           questions of --predict_file have answers, as in the original):
                           the checkpoint with the best F1 on --predict_file, which answers
  predictions.json         {question id: answer text}, the official format
  nbest_predictions.json   the n best answers per question, with probabilities
  null_odds.json           v2.0: the no-answer score of each question (the official
                           evaluation's --na-prob-file): the original head's smallest
                           cls_logits over its windows, or score_null - best span score
  eval_results.json        EM / F1 (official definitions, of the --metric named in
                           its "metric") when the predict file has answers; for v2.0
                           also the best no-answer threshold,
                           and for the original head the threshold used
                           (null_score_diff_threshold) and EM / F1 at threshold 0. The
                           original head's EM / F1 are the original's: a question whose
                           no-answer score exceeds 1.0 (the official evaluation's
                           --na-prob-thresh) counts as answered "" even where a threshold
                           above 1.0 answers it in predictions.json
"""

import dataclasses

from absl import flags

from albert_tf.settings import field_default
from albert_tf.tasks import qa_metrics, squad
from albert_tf.training import finetuning_flags

# The task module is imported in the functions: its TensorFlow-using parts, after cli.run has imported
# TensorFlow quietly (past the checks the flags alone decide).


def default(name):
    from albert_tf.tasks.squad_task import SquadConfig

    return field_default(SquadConfig, name)


def define_squad_flags():
    flags.DEFINE_enum("version", None, list(squad.VERSIONS), "SQuAD version of the files: 1.1, or 2.0 (adds "
                      "unanswerable questions, predicted as \"\"; --squad_v2_head says how).")
    flags.DEFINE_enum("squad_v2_head", default("squad_v2_head"), list(squad.V2_HEADS), "SQuAD 2.0's model: "
                      "original (the original ALBERT's run_squad_v2 model: the end scored given the start, a beam of "
                      "5 starts x 5 ends, an answerability logit deciding no answer) or null_score (BERT's span head: "
                      "no answer when the [CLS] span outscores the best one). Default: the head --init_checkpoint has "
                      "when it is a fine-tuned SQuAD 2.0 model, else original.")
    flags.DEFINE_string("train_file", None, "SQuAD JSON to train on (official layout), for --do_train.")
    flags.DEFINE_string("predict_file", None, "SQuAD JSON to answer (--do_predict) or to score checkpoints on "
                        "(--do_eval).")
    flags.DEFINE_integer("doc_stride", default("doc_stride"), "Tokens between the starts of consecutive windows over "
                         "a long context (original: 128).")
    flags.DEFINE_integer("max_query_length", default("max_query_length"), "Questions are cut to this many tokens "
                         "(original: 64).")
    flags.DEFINE_integer("n_best_size", default("n_best_size"), "Answers kept per question in "
                         "nbest_predictions.json, and with BERT's span head the start/end candidates tried per window "
                         "(the original v2 head tries its beam of 5 x 5) (original: 20).")
    flags.DEFINE_integer("max_answer_length", default("max_answer_length"), "Longest answer, in tokens "
                         "(original: 30).")
    flags.DEFINE_float("null_score_diff_threshold", default("null_score_diff_threshold"), "v2.0: predict no answer "
                       "where a question's no-answer score exceeds this, in logit units: the original head's smallest "
                       "answerability logit over the question's windows, the null_score head's score_null - best "
                       "span score. Default: for the original head, the threshold with the best F1 on --predict_file "
                       "when its questions have answers (as the original tunes it; 0.0 when no threshold beats "
                       "answering nothing), else 0.0; for null_score 0.0. "
                       "eval_results.json's best_f1_thresh is the value that is best on the predict file.")
    flags.DEFINE_enum("metric", default("metric"), list(qa_metrics.CHOICES), "The official metric that scores "
                      "--predict_file: squad (SQuAD's EM and whitespace-token F1), cmrc2018 (CMRC 2018's: EM and F1 "
                      "over each Chinese character and each other word, punctuation removed), jsquad (JGLUE's "
                      "JSQuAD: EM and character F1), or auto: cmrc2018 for Chinese contexts, jsquad for Japanese, "
                      "else squad (SQuAD 2.0: squad). The choice is printed and recorded in eval_results.json.")


def squad_config():
    from albert_tf.tasks.squad_task import SquadConfig

    return SquadConfig(**{field.name: flags.FLAGS[field.name].value for field in dataclasses.fields(SquadConfig)})


def console_main():
    """The `albert-run-squad` console script."""
    from albert_tf.tasks.squad_task import SquadTask

    finetuning_flags.run(SquadTask(), define_squad_flags, squad_config)


if __name__ == "__main__":
    console_main()
