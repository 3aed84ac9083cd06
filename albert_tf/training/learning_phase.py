"""Which phase a pretraining run is in, read from its held-out and training figures.

Pretraining from scratch goes through recognisable phases, and the figures of
the training batches alone cannot tell them apart:

  frequent-piece level  Held-out MLM accuracy at [MASK] inputs is still within
                        FREQUENT_PIECE_MARGIN of what answering the data's most
                        frequent masked piece everywhere scores (about 5% on
                        English text with a 30k vocabulary). The model predicts
                        from piece frequencies alone. Every recipe sits here for
                        a while (about 2,500 steps at batch 64, seq 64, on
                        albert_tf's small-model runs); a run that stays
                        for tens of thousands of steps has a schedule or
                        initialization problem, not too few steps.
  learning from context Held-out accuracy has left that level, and training
                        figures do not pull away from held-out ones.
  memorizing            Training figures pull away from held-out ones while
                        the held-out ones stop improving: the training SOP
                        accuracy exceeds held-out by more than MEMORIZING_SOP_GAP,
                        or the held-out MLM loss exceeds the training MLM loss by
                        more than MEMORIZING_MLM_LOSS_GAP nats, and the held-out
                        MLM loss fell by less than MIN_HELDOUT_IMPROVEMENT per
                        evaluation over the last TREND_EVALUATIONS evaluations
                        (twice that to leave the phase once in it: see below).
                        The model learns the training
                        set's fixed pairs and masks (static data repeated many
                        epochs: albert_tf's best static run on a 14 MB corpus
                        reached training SOP 0.82 against held-out 0.60). A gap
                        alone is not enough: other documents than the training
                        ones are harder to predict even for a model that is still
                        learning (the dynamic-instance run on the same corpus had
                        its held-out MLM loss 0.34 above training at step 8,000,
                        still falling by 0.03-0.04 per 500 steps, its held-out
                        accuracy at [MASK] still rising).

Why a trend over several evaluations, and a higher bar to leave memorizing:
late in a run the held-out MLM loss falls by about MIN_HELDOUT_IMPROVEMENT per
evaluation, and from one evaluation to the next its noise is as large, so a rule
reading the last two evaluations called the same run memorizing and learning by
turns (every other evaluation of albert_tf's 3-hour runs on the 14 MB corpus,
from about step 12,000). Over four evaluations and with that hysteresis the
same histories change phase once, or twice around one early blip.

The thresholds are stated here, and the same ones are used by the progress
output, TensorBoard (eval/phase) and the JSON-lines history;
docs/pretraining_from_scratch.md says what to change in each phase.
"""

import dataclasses

FREQUENT_PIECE_MARGIN = 0.02
MEMORIZING_SOP_GAP = 0.10
MEMORIZING_MLM_LOSS_GAP = 0.30
MIN_HELDOUT_IMPROVEMENT = 0.01  # nats of held-out MLM loss per evaluation, over the trend's evaluations
TREND_EVALUATIONS = 4  # earlier evaluations the held-out trend is read over
LEAVE_MEMORIZING_FACTOR = 2  # a memorizing run is learning again when the trend beats the threshold this much

FREQUENT_PIECE = "frequent-piece level"
LEARNING = "learning from context"
MEMORIZING = "memorizing"
PHASES = (FREQUENT_PIECE, LEARNING, MEMORIZING)


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    reason: str

    @property
    def index(self):
        """0, 1, 2: the phase as a number, for a TensorBoard scalar."""
        return PHASES.index(self.name)


def learning_phase(heldout, training, frequent_piece_level, earlier_heldout=(), previous_phase=None):
    """The Phase of a run, from held-out and recent training metric dicts (metrics_from_sums names).

    `training` may be None (no training steps since the last evaluation).
    `earlier_heldout`: the held-out figures of up to TREND_EVALUATIONS earlier
    evaluations, oldest first (none at the first evaluation: memorizing is judged
    only with training figures and a trend). `previous_phase`: the last
    evaluation's phase name, if any.
    """
    at_mask = heldout["masked_lm_accuracy_at_mask"]
    earlier = list(earlier_heldout)[-TREND_EVALUATIONS:]
    threshold = MIN_HELDOUT_IMPROVEMENT * (LEAVE_MEMORIZING_FACTOR if previous_phase == MEMORIZING else 1)
    stalled = bool(earlier) and (
        (earlier[0]["masked_lm_loss"] - heldout["masked_lm_loss"]) / len(earlier) < threshold)
    if training and stalled:
        sop_gap = training["sentence_order_accuracy"] - heldout["sentence_order_accuracy"]
        loss_gap = heldout["masked_lm_loss"] - training["masked_lm_loss"]
        if sop_gap > MEMORIZING_SOP_GAP:
            return Phase(MEMORIZING, f"training SOP accuracy {training['sentence_order_accuracy']:.3f} is "
                                     f"{sop_gap:.3f} above held-out {heldout['sentence_order_accuracy']:.3f}")
        if loss_gap > MEMORIZING_MLM_LOSS_GAP:
            return Phase(MEMORIZING, f"held-out MLM loss {heldout['masked_lm_loss']:.3f} is {loss_gap:.3f} above "
                                     f"training {training['masked_lm_loss']:.3f}")
    if at_mask < frequent_piece_level + FREQUENT_PIECE_MARGIN:
        return Phase(FREQUENT_PIECE, f"held-out accuracy at [MASK] {at_mask:.3f}, level {frequent_piece_level:.3f}")
    return Phase(LEARNING, f"held-out accuracy at [MASK] {at_mask:.3f}, {at_mask - frequent_piece_level:.3f} above "
                           f"the frequent-piece level {frequent_piece_level:.3f}")
