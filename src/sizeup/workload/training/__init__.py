"""Training and fine-tuning a transformer: memory per GPU with every term, step time, MFU, time to
train and cost — one job per module:

- config: the run's configuration (precision recipes, optimizers, recomputation policies)
- activations: what each layer keeps for its backward pass (Korthikanti et al. 2022, generalised)
- ssm_activations: what a state-space (Mamba / Mamba-2) layer keeps, fused or naive scan
- encoder_decoder: an encoder-decoder's encoder stack, cross-attention, encoder step time and model FLOPs
- memory: memory per GPU, term by term
- step_time: the time of one optimizer step, and the MFU that follows
- cost: the offer a run uses, time to train and its price
- estimate: the whole estimate (the micro-batch that fits, then the above)
- traced: a traced torch module's training step, priced
"""

from sizeup.workload.training.activations import layer_activation_bytes, layer_projections
from sizeup.workload.training.config import (OPTIMIZER_STATE_BYTES, PRECISIONS, RECOMPUTE_POLICIES, SSM_SCANS, Precision,
                                             TrainingConfig, with_attention, with_method,
                                             with_settings)
from sizeup.workload.training.estimate import TrainingEstimate, estimate_training
from sizeup.workload.training.memory import TrainingMemory, training_memory
from sizeup.workload.training.traced import TracedTrainingEstimate, estimate_traced_training

__all__ = ["Precision", "PRECISIONS", "OPTIMIZER_STATE_BYTES", "RECOMPUTE_POLICIES", "SSM_SCANS", "TrainingConfig",
           "TrainingMemory", "TrainingEstimate", "TracedTrainingEstimate", "layer_activation_bytes",
           "layer_projections", "estimate_training", "estimate_traced_training", "training_memory",
           "with_settings", "with_method", "with_attention"]
