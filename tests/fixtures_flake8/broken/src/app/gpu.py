DEVICE = 'cuda:0'
