"""BERT-base encoder (12 layers, hidden 768, 12 heads) as a plain PyTorch module.

It follows Hugging Face's BertModel layer for layer (post-LayerNorm, exact erf GELU, a tanh pooler)
so the exported graph looks like a real BERT, but needs neither the transformers package nor a
download. The 0/1 attention mask becomes the usual additive mask: 0 where attended, -10000 where
padded, broadcast over heads and query positions.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position = nn.Embedding(config.max_positions, config.hidden_size)
        self.token_type = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.register_buffer(
            "position_ids", torch.arange(config.max_positions).unsqueeze(0), persistent=False
        )

    def forward(self, input_ids, token_type_ids):
        positions = self.position_ids[:, : input_ids.shape[1]]
        return self.norm(self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids))


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_heads
        self.head_size = config.hidden_size // config.num_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def split_heads(self, x):
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.num_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden, additive_mask):
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + additive_mask
        context = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3).contiguous()
        batch, seq = context.shape[:2]
        return context.view(batch, seq, self.num_heads * self.head_size)


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.gelu = nn.GELU()
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden, additive_mask):
        attended = self.attention_norm(hidden + self.attention_output(self.attention(hidden, additive_mask)))
        return self.output_norm(attended + self.output(self.gelu(self.intermediate(attended))))


class Bert(nn.Module):
    def __init__(self, config=BertConfig()):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_layers))
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)
        self.apply(lambda module: _init_weights(module, config.initializer_range))

    def forward(self, input_ids, attention_mask, token_type_ids):
        # (batch, seq) 0/1 -> (batch, 1, 1, seq) additive, as BertModel.get_extended_attention_mask.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        hidden = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            hidden = layer(hidden, additive_mask)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        return hidden, pooled


def _init_weights(module, std):
    """BertPreTrainedModel's initialization: normal(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=std)
    if isinstance(module, nn.Linear):
        nn.init.zeros_(module.bias)
