"""Record a torch.profiler trace of one prefill of a shipped model on this CPU, for `llmsim profile`.

The real transformers model is built from the shipped config with random weights (nothing downloaded),
run once untimed (first-call allocations and kernel choices stay out of the trace), then profiled with
record_shapes=True so llmsim can count each matmul's FLOPs and bytes from its shapes.

    python examples/profile_cpu.py --model gpt2 --batch-size 1 --prompt-len 128 --out gpt2-prefill.json
    llmsim profile gpt2-prefill.json --hardware cpu.toml --model gpt2 --batch-size 1 --prompt-len 128 \
        --weight-dtype float32 --activation-dtype float32
(cpu.toml: `llmsim calibrate --quick --threads 1 --dtypes float32 --out cpu.toml` on the same machine; the model
runs in float32 here, so the prediction is asked for float32 too: the config states no dtype and the prediction
would assume bf16, which a float32-only calibration has no peak for)
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, as calibrate)")
    parser.add_argument("--out", default="prefill-trace.json")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from llmsim.validation.hf_model import build_model, config_dict, input_ids, prepare_config

    torch.set_num_threads(args.threads)
    data, _ = config_dict(args.model)
    model = build_model(prepare_config(data, "float32", None), "float32", "cpu")
    ids = input_ids(model, args.batch_size, args.prompt_len, "cpu", seed=0)
    with torch.inference_mode():
        model(input_ids=ids)  # warm-up, not recorded
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            model(input_ids=ids)
    prof.export_chrome_trace(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
