def hook_environment(repo, user, role, commands=()):
    return {}
