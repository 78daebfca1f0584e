import torch

from shoal.optim import Adam


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))


def test_adam_follows_torch_adam_step_for_step():
    ours, theirs = _model(0), _model(0)
    opt_ours = Adam(ours.parameters(), lr=3e-3, eps=1e-5)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=3e-3, eps=1e-5)
    data = torch.randn(64, 5, generator=torch.Generator().manual_seed(1))
    for step in range(25):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            (model(data) ** 2).mean().backward()
            opt.step()
        if step == 10:  # a learning-rate change mid-run, as annealing does
            opt_ours.lr = 1e-3
            for group in opt_theirs.param_groups:
                group["lr"] = 1e-3
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_continues_identically():
    first, second = _model(0), _model(0)
    opt_first = Adam(first.parameters(), lr=1e-2)
    data = torch.randn(16, 5)
    for _ in range(3):
        opt_first.zero_grad()
        first(data).sum().backward()
        opt_first.step()
    second.load_state_dict(first.state_dict())
    opt_second = Adam(second.parameters(), lr=0.5)
    opt_second.load_state_dict(opt_first.state_dict())
    assert opt_second.lr == 1e-2
    for model, opt in ((first, opt_first), (second, opt_second)):
        opt.zero_grad()
        model(data).sum().backward()
        opt.step()
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_parameters_stay_the_modules_own_and_clipping_matches_torch():
    ours, theirs = _model(0), _model(0)
    opt = Adam(ours.parameters(), lr=0.1)
    data = torch.randn(8, 5)
    for model in (ours, theirs):
        (model(data) ** 2).sum().backward()
    norm = opt.clip_grad_norm(0.01)
    expected = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.01)
    torch.testing.assert_close(norm, expected)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad)
    opt.step()
    # The step moved the module's parameters: they are views of the optimiser's buffer.
    assert not torch.equal(ours[0].weight, theirs[0].weight)
    assert ours[0].weight.data_ptr() == opt.flat.data_ptr()
