"""The original BERT/ALBERT fine-tuning optimizer (`AdamWeightDecayOptimizer`) and learning-rate schedule for
PyTorch, so that a Hugging Face model can be trained with albert_tf's own update rule and schedule beside torch's
AdamW and transformers' schedule.

    m <- beta_1 * m + (1 - beta_1) * g
    v <- beta_2 * v + (1 - beta_2) * g^2
    w <- w - lr * (m / (sqrt(v) + epsilon) + weight_decay * w)

No bias correction (torch.optim.AdamW corrects m and v by 1 - beta^t, so its first steps are smaller while v is
still filling), epsilon 1e-6, weight decay inside the step; a parameter group's "weight_decay" says where decay
applies: none for a parameter whose name holds a pattern of EXCLUDE_FROM_WEIGHT_DECAY, the original's (every
LayerNorm and bias; run_glue's own groups decay Hugging Face ALBERT's full_layer_layer_norm weight).
transformers' own AdamW(correct_bias=False) did this and is gone from transformers 5.

The schedule: linear warmup over W steps, then linear decay measured from step 0 over all T steps, so at step W
the rate is lr * (1 - W / T), 10% below the peak with 10% warmup, where transformers' get_linear_schedule_with_warmup
decays from the peak over the T - W steps after warmup.
"""

import torch

# albert_tf.optimization's, held equal by a test: importing it would load TensorFlow into the PyTorch process.
EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


class OriginalAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-6):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            beta_1, beta_2 = group["betas"]
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                state = self.state[parameter]
                if not state:
                    state["m"] = torch.zeros_like(parameter)
                    state["v"] = torch.zeros_like(parameter)
                m, v = state["m"], state["v"]
                m.mul_(beta_1).add_(parameter.grad, alpha=1.0 - beta_1)
                v.mul_(beta_2).addcmul_(parameter.grad, parameter.grad, value=1.0 - beta_2)
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(parameter, alpha=group["weight_decay"])
                parameter.add_(update, alpha=-group["lr"])
        return loss


def original_schedule(optimizer, warmup_steps, total_steps):
    """A LambdaLR of the original's schedule (albert_tf's WarmupPolynomialDecay at power 1, end rate 0)."""

    def factor(step):
        if step < warmup_steps:
            return step / warmup_steps
        return max(0.0, 1.0 - min(step, total_steps) / total_steps)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
