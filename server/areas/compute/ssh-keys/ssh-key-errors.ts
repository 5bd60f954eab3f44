import { conflict, notFound } from '../../../core/errors.ts';

// The SSH keys' named errors: the only place their status, code and title are chosen.

export const sshKeyNameTaken = (name: string) =>
  conflict(
    'ssh_key_name_taken',
    'SSH key name taken',
    `The organization already has an SSH key named ${name}; choose another name or delete that key first.`,
  );

export const sshKeyNotFound = (sshKeyId: string) => notFound(`No SSH key ${sshKeyId} in this organization.`);
